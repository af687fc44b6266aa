package objfile

import (
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/objstore"
	"github.com/sluicehq/sluice/sdk"
)

// Partitioning says how records are spread over key prefixes.
type Partitioning int

// Partitionings.
const (
	// PartitionNone writes every file directly under Prefix.
	PartitionNone Partitioning = iota
	// PartitionEventHour writes a record under
	// "dt=YYYY-MM-DD/hr=HH/" of its event time in UTC.
	PartitionEventHour
	// PartitionField writes a record under "<Field>=<value>/", value being
	// the record's top-level JSON field Field (a string, number or
	// boolean; anything else, or a value that is not a JSON object, goes
	// under "<Field>=__unknown__/").
	PartitionField
)

// String names p.
func (p Partitioning) String() string {
	switch p {
	case PartitionNone:
		return "none"
	case PartitionEventHour:
		return "event-hour"
	case PartitionField:
		return "field"
	}
	return fmt.Sprintf("Partitioning(%d)", int(p))
}

// Defaults.
const (
	DefaultRollBytes     = 64 << 20
	DefaultRollRecords   = 1_000_000
	DefaultPendingPrefix = "_pending/"
)

// SinkConfig describes an object-storage file sink.
type SinkConfig struct {
	// Name is the operator's name; Stream the stream it reads, with
	// Routing; Parallelism the number of instances (0: 1).
	Name, Stream string
	Routing      sdk.Routing
	Parallelism  int
	// Store receives the files (s3store, fsstore, or storeurl.Open's).
	// Required. The sink does not close it.
	Store objstore.Store
	// Prefix is put before every key: "" or a prefix ending in "/".
	Prefix string
	// PendingPrefix, under Prefix, holds the files of checkpoints not yet
	// complete (default "_pending/"; it must end in "/"). Readers skip it
	// (it starts with '_', which Hive-style readers ignore).
	PendingPrefix string
	// Partition and Field say how files are partitioned (see
	// Partitioning); Field is required for PartitionField.
	Partition Partitioning
	Field     string
	// RollBytes and RollRecords close a file once it holds that many
	// bytes or records (defaults 64 MiB and 1,000,000); the next record
	// of its partition starts a new file.
	RollBytes   int
	RollRecords int
	// Format is the files' layout: FormatJSONLines (the default) or
	// FormatParquet, whose Columns (required) name the top-level JSON
	// fields written and their types; other fields of a record are not
	// written. For Parquet, RollBytes counts the JSON bytes taken in.
	Format  Format
	Columns []Column
	// Stats, when set, receives the sink's counters.
	Stats *Stats
}

// Validate reports a configuration that cannot work, naming the field.
func (c SinkConfig) Validate() error {
	bad := func(field, fix string) error {
		return fmt.Errorf("%w: sink %q: %s: %s", ErrConfig, c.Name, field, fix)
	}
	switch {
	case c.Name == "":
		return bad("Name", "required")
	case c.Stream == "":
		return bad("Stream", "required")
	case c.Store == nil:
		return bad("Store", "required (an objstore.Store, e.g. from storeurl.Open)")
	case c.Prefix != "" && (!strings.HasSuffix(c.Prefix, "/") || objstore.ValidatePrefix(c.Prefix) != nil):
		return bad("Prefix", "must be empty or a valid key prefix ending in \"/\"")
	case c.PendingPrefix != "" && (!strings.HasSuffix(c.PendingPrefix, "/") || objstore.ValidatePrefix(c.PendingPrefix) != nil):
		return bad("PendingPrefix", "must be a valid key prefix ending in \"/\"")
	case c.Partition < PartitionNone || c.Partition > PartitionField:
		return bad("Partition", "must be PartitionNone, PartitionEventHour or PartitionField")
	case c.Partition == PartitionField && (c.Field == "" || len(c.Field) > 50 || strings.ContainsAny(c.Field, "/=\\") ||
		strings.HasPrefix(c.Field, ".") || strings.HasPrefix(c.Field, "_") || objstore.ValidatePrefix(c.Field) != nil):
		return bad("Field", "required for PartitionField: at most 50 bytes, without '/', '=' or '\\', not starting with '.' or '_'")
	case c.RollBytes < 0 || c.RollRecords < 0:
		return bad("RollBytes/RollRecords", "must not be negative (0: the default)")
	case c.Format != FormatJSONLines && c.Format != FormatParquet:
		return bad("Format", "must be FormatJSONLines or FormatParquet")
	case c.Format == FormatJSONLines && len(c.Columns) > 0:
		return bad("Columns", "only for FormatParquet")
	}
	if c.Format == FormatParquet {
		if err := validateColumns(c.Columns); err != nil {
			return bad("Columns", err.Error())
		}
	}
	return nil
}

// withDefaults returns c with zero values replaced by the defaults.
func (c SinkConfig) withDefaults() SinkConfig {
	if c.PendingPrefix == "" {
		c.PendingPrefix = DefaultPendingPrefix
	}
	if c.RollBytes == 0 {
		c.RollBytes = DefaultRollBytes
	}
	if c.RollRecords == 0 {
		c.RollRecords = DefaultRollRecords
	}
	if c.Stats == nil {
		c.Stats = new(Stats)
	}
	return c
}
