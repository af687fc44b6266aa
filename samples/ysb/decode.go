package ysb

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// errSlowPath makes scanFields hand a record to encoding/json.
var errSlowPath = errors.New("ysb: needs the full JSON decoder")

// Fields returns the event_type and ad_id of a JSON event. It scans a flat
// object of string (and scalar) values without allocating; anything else
// (escapes, nested values) goes through encoding/json, so the answer is
// always encoding/json's. The returned slices may alias b.
func Fields(b []byte) (eventType, adID []byte, err error) {
	eventType, adID, err = scanFields(b)
	if errors.Is(err, errSlowPath) {
		return DecodeJSON(b)
	}
	return eventType, adID, err
}

// DecodeJSON is Fields with encoding/json only (the baseline of the
// decode benchmark).
func DecodeJSON(b []byte) (eventType, adID []byte, err error) {
	var e struct {
		AdID      string `json:"ad_id"`
		EventType string `json:"event_type"`
	}
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, nil, fmt.Errorf("ysb: bad event JSON: %w", err)
	}
	return []byte(e.EventType), []byte(e.AdID), nil
}

var (
	keyEventType = []byte("event_type")
	keyAdID      = []byte("ad_id")
)

// scanFields scans {"k":"v",…} with plain ASCII strings and scalar
// values, keeping the last value of each wanted key (as encoding/json
// does for duplicates); errSlowPath for anything it does not handle.
func scanFields(b []byte) (eventType, adID []byte, err error) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, nil, errSlowPath
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return nil, nil, endOfObject(b, i)
	}
	for {
		key, j, ok := scanString(b, i)
		if !ok {
			return nil, nil, errSlowPath
		}
		i = skipSpace(b, j)
		if i >= len(b) || b[i] != ':' {
			return nil, nil, errSlowPath
		}
		i = skipSpace(b, i+1)
		var val []byte
		isString := i < len(b) && b[i] == '"'
		if isString {
			if val, j, ok = scanString(b, i); !ok {
				return nil, nil, errSlowPath
			}
		} else if j, ok = scanScalar(b, i); !ok {
			return nil, nil, errSlowPath
		}
		switch {
		case bytes.Equal(key, keyEventType), bytes.Equal(key, keyAdID):
			if !isString {
				return nil, nil, errSlowPath // null, or a type error: encoding/json's call
			}
			if key[0] == 'e' {
				eventType = val
			} else {
				adID = val
			}
		case !isPlainKey(key):
			return nil, nil, errSlowPath // encoding/json matches keys case-insensitively
		}
		i = skipSpace(b, j)
		if i >= len(b) {
			return nil, nil, errSlowPath
		}
		if b[i] == '}' {
			return eventType, adID, endOfObject(b, i)
		}
		if b[i] != ',' {
			return nil, nil, errSlowPath
		}
		i = skipSpace(b, i+1)
	}
}

// endOfObject checks that only space follows the closing brace at i.
func endOfObject(b []byte, i int) error {
	if skipSpace(b, i+1) != len(b) {
		return errSlowPath
	}
	return nil
}

// isPlainKey reports whether key cannot match a wanted key under
// encoding/json's case-insensitive matching: it differs from both in
// length or in a byte other than by ASCII case.
func isPlainKey(key []byte) bool {
	// Keys are ASCII here (scanString), so Unicode folding (the Kelvin
	// sign to k) does not arise.
	if len(key) != len(keyEventType) && len(key) != len(keyAdID) {
		return true
	}
	return !bytes.EqualFold(key, keyEventType) && !bytes.EqualFold(key, keyAdID)
}

// scanString returns the contents of the string starting at b[i] == '"'
// and the index after it; ok is false for escapes, control characters and
// non-ASCII bytes (left to encoding/json, which validates UTF-8).
func scanString(b []byte, i int) (s []byte, next int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return b[i+1 : j], j + 1, true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, 0, false
		}
	}
	return nil, 0, false
}

// scanScalar skips a number, true, false or null at b[i].
func scanScalar(b []byte, i int) (next int, ok bool) {
	j := i
	for j < len(b) && (b[j] >= '0' && b[j] <= '9' || b[j] == '-' || b[j] == '+' || b[j] == '.' || b[j] == 'e' || b[j] == 'E') {
		j++
	}
	if j > i {
		return j, json.Valid(b[i:j])
	}
	for _, lit := range []string{"true", "false", "null"} {
		if bytes.HasPrefix(b[i:], []byte(lit)) {
			return i + len(lit), true
		}
	}
	return 0, false
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}
