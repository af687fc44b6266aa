package objfile

import (
	"encoding/json"
	"strings"

	"github.com/sluicehq/sluice/sdk"
)

// unknown is the partition value of a record without a usable Field.
const unknown = "__unknown__"

// partition returns rec's partition prefix under cfg: "" or a path ending
// in "/".
func partition(cfg SinkConfig, rec sdk.Record) string {
	switch cfg.Partition {
	case PartitionEventHour:
		return rec.EventTime.UTC().Format("dt=2006-01-02/hr=15/")
	case PartitionField:
		return cfg.Field + "=" + fieldValue(rec.Value, cfg.Field) + "/"
	}
	return ""
}

// fieldValue returns the top-level JSON field of value, made safe for a
// key segment, or unknown.
func fieldValue(value []byte, field string) string {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(value, &obj); err != nil {
		return unknown
	}
	raw, ok := obj[field]
	if !ok {
		return unknown
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return unknown
	}
	var s string
	switch v := v.(type) {
	case string:
		s = v
	case float64, bool:
		s = strings.TrimSpace(string(raw))
	default:
		return unknown
	}
	if s == "" {
		return unknown
	}
	return sanitize(s)
}

// sanitize replaces what objstore keys or readers of partitions trip on
// ('/', control characters, '=' and a leading '.' or '_') with '_'.
func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c == '/' || c == '\\' || c == '=' || c < 0x20 || c == 0x7f || (i == 0 && (c == '.' || c == '_')) {
			b[i] = '_'
		}
	}
	if len(b) > 200 {
		b = b[:200]
	}
	return strings.ToValidUTF8(string(b), "_")
}
