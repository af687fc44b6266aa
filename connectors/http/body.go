package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	nethttp "net/http"

	"github.com/sluicehq/sluice/sdk"
)

// bodyError is a request the source refuses: the status and a message
// naming the problem, sent to the client.
type bodyError struct {
	status int
	msg    string
}

func (e *bodyError) Error() string { return e.msg }

func refuse(status int, format string, a ...any) *bodyError {
	return &bodyError{status: status, msg: fmt.Sprintf(format, a...)}
}

// Content types of a body: a JSON array (or one JSON value), or JSON
// lines.
var lineTypes = map[string]bool{
	"application/x-ndjson": true, "application/jsonl": true, "application/json-lines": true,
	"application/jsonlines": true, "application/x-jsonlines": true,
}

// parseBody reads a request's records: each element of a JSON array, or
// each non-blank line of JSON lines, becomes a record whose value is its
// JSON text (key from keyField, if set). Every refusal names the record.
func parseBody(contentType string, body []byte, maxRecord int, keyField string) ([]sdk.Record, *bodyError) {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return nil, refuse(nethttp.StatusUnsupportedMediaType, "Content-Type %q: want application/json (an array of records) or application/x-ndjson (JSON lines)", contentType)
	}
	var vals [][]byte
	var berr *bodyError
	switch {
	case mt == "application/json":
		vals, berr = jsonArray(body)
	case lineTypes[mt]:
		vals, berr = jsonLines(body)
	default:
		return nil, refuse(nethttp.StatusUnsupportedMediaType, "Content-Type %q: want application/json (an array of records) or application/x-ndjson (JSON lines)", mt)
	}
	if berr != nil {
		return nil, berr
	}
	recs := make([]sdk.Record, 0, len(vals))
	for i, v := range vals {
		if len(v) > maxRecord {
			return nil, refuse(nethttp.StatusRequestEntityTooLarge, "record %d is %d bytes: the limit is %d (MaxRecordBytes)", i+1, len(v), maxRecord)
		}
		rec := sdk.Record{Value: v}
		if keyField != "" {
			k, err := keyOf(v, keyField)
			if err != nil {
				return nil, refuse(nethttp.StatusBadRequest, "record %d: %v", i+1, err)
			}
			rec.Key = k
		}
		recs = append(recs, rec)
	}
	return recs, nil
}

// jsonArray splits a JSON array into its elements; a body that is one
// other JSON value is one record.
func jsonArray(body []byte) ([][]byte, *bodyError) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return nil, refuse(nethttp.StatusBadRequest, "empty body: send a JSON array of records")
	}
	if trimmed[0] != '[' {
		if !json.Valid(trimmed) {
			return nil, refuse(nethttp.StatusBadRequest, "body is not valid JSON: %v", jsonError(trimmed))
		}
		return [][]byte{trimmed}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if _, err := dec.Token(); err != nil {
		return nil, refuse(nethttp.StatusBadRequest, "body: %v", err)
	}
	var out [][]byte
	for dec.More() {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, refuse(nethttp.StatusBadRequest, "record %d: invalid JSON: %v", len(out)+1, err)
		}
		out = append(out, []byte(raw))
	}
	if _, err := dec.Token(); err != nil {
		return nil, refuse(nethttp.StatusBadRequest, "after record %d: the array does not end: %v", len(out), err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, refuse(nethttp.StatusBadRequest, "text after the array's end: send one JSON array")
	}
	if len(out) == 0 {
		return nil, refuse(nethttp.StatusBadRequest, "empty array: send at least one record")
	}
	return out, nil
}

// jsonLines splits JSON lines, skipping blank lines.
func jsonLines(body []byte) ([][]byte, *bodyError) {
	var out [][]byte
	for n, line := range bytes.Split(body, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if !json.Valid(line) {
			return nil, refuse(nethttp.StatusBadRequest, "record %d (line %d): invalid JSON: %v", len(out)+1, n+1, jsonError(line))
		}
		out = append(out, line)
	}
	if len(out) == 0 {
		return nil, refuse(nethttp.StatusBadRequest, "empty body: send one JSON record per line")
	}
	return out, nil
}

func jsonError(b []byte) error {
	var v any
	return json.Unmarshal(b, &v)
}

// keyOf returns the string field of a JSON object.
func keyOf(v []byte, field string) ([]byte, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(v, &obj); err != nil {
		return nil, fmt.Errorf("KeyField %q: the record is not a JSON object", field)
	}
	var k string
	if err := json.Unmarshal(obj[field], &k); err != nil {
		return nil, fmt.Errorf("KeyField %q: missing or not a string", field)
	}
	return []byte(k), nil
}
