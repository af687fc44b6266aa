package api

import (
	"encoding/base64"
	"time"
	"unicode/utf8"
)

// GET /v1/streams/{name}/tail[?n=N] answers application/x-ndjson: one
// TailRecord per line, for every record produced to the stream from the
// moment the answer's header was sent, until the client goes, N records
// were sent, or the node stops. A stream no deployed operator produces or
// reads answers 404 with Error.

// TailRecord is one record of a tailed stream.
type TailRecord struct {
	// Key and Value hold the record's key and value when they are valid
	// UTF-8; otherwise KeyBase64 and ValueBase64 hold them, in standard
	// base64.
	Key         string `json:"key,omitempty"`
	KeyBase64   string `json:"keyBase64,omitempty"`
	Value       string `json:"value,omitempty"`
	ValueBase64 string `json:"valueBase64,omitempty"`
	// EventTime is the record's event time (absent when zero).
	EventTime time.Time    `json:"eventTime,omitzero"`
	Headers   []TailHeader `json:"headers,omitempty"`
}

// TailHeader is one header of a TailRecord.
type TailHeader struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// TextOrBase64 returns b as text when it is valid UTF-8, or else as
// standard base64 (the second result).
func TextOrBase64(b []byte) (text, b64 string) {
	if utf8.Valid(b) {
		return string(b), ""
	}
	return "", base64.StdEncoding.EncodeToString(b)
}

// KeyBytes returns the record's key, decoding KeyBase64 if set.
func (r TailRecord) KeyBytes() ([]byte, error) { return fromTextOrBase64(r.Key, r.KeyBase64) }

// ValueBytes returns the record's value, decoding ValueBase64 if set.
func (r TailRecord) ValueBytes() ([]byte, error) { return fromTextOrBase64(r.Value, r.ValueBase64) }

func fromTextOrBase64(text, b64 string) ([]byte, error) {
	if b64 != "" {
		return base64.StdEncoding.DecodeString(b64)
	}
	return []byte(text), nil
}
