package file

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/sluicehq/sluice/sdk"
)

// Stdio is the Path that means stdin (source) or stdout (sink).
const Stdio = "-"

// Defaults for zero fields.
const (
	DefaultBatch       = 1024     // lines per Poll
	DefaultMaxLineSize = 1 << 20  // bytes in a line, without its '\n'
	DefaultBufferSize  = 64 << 10 // bytes a sink instance buffers before writing
	DefaultPerm        = 0o644    // permissions of a file a sink creates
)

// Headers set on the dead letters of a source.
const (
	// HeaderPath names the file (or "-") the line came from.
	HeaderPath = "sluice-file-path"
	// HeaderOffset holds the line's byte offset in the file, in decimal.
	HeaderOffset = "sluice-file-offset"
)

// SourceConfig configures a line source. Zero fields take the defaults
// above; Validate names the first field that is wrong.
type SourceConfig struct {
	// Name is the operator's name (and kind); required.
	Name string
	// Stream is the output stream; required.
	Stream string
	// Path is the file read, or "-" (Stdio) for stdin; required. A
	// relative path is made absolute when the source is created. The
	// offset the source stores belongs to this path: another Path is read
	// from its start.
	Path string
	// Parallelism must be 0 or 1: a file is read by one instance, in
	// order. (It is here so that a copy of another connector's config that
	// asks for more fails loudly instead of being ignored.)
	Parallelism int
	// Key returns the key of the record made from line; nil means records
	// have no key. line is the record's value: Key must not modify it, and
	// may return a subslice of it.
	Key func(line []byte) []byte
	// Batch bounds the lines one Poll produces.
	Batch int
	// MaxLineSize bounds a line's length in bytes, without its newline. A
	// longer line goes to the operator's dead-letter stream, cut to
	// MaxLineSize bytes, with sdk.HeaderError, HeaderPath and HeaderOffset,
	// and the source moves on to the next line.
	MaxLineSize int
	// Stdin is what the path "-" reads; nil means os.Stdin.
	Stdin io.Reader
	// Follow keeps reading as the file grows, as tail -f does: at its end
	// the source waits for more, and a last line without its '\n' waits
	// for it. Otherwise (the default) the end of the file is the end of
	// the stream: the source's last line is produced and its next Poll
	// returns sdk.ErrEndOfStream, so that an embedded batch job (node.Run)
	// returns once everything read is processed.
	Follow bool
}

// withDefaults fills zero fields and makes Path absolute.
func (c SourceConfig) withDefaults() SourceConfig {
	if c.Batch == 0 {
		c.Batch = DefaultBatch
	}
	if c.MaxLineSize == 0 {
		c.MaxLineSize = DefaultMaxLineSize
	}
	if c.Path != Stdio {
		if abs, err := filepath.Abs(c.Path); err == nil {
			c.Path = abs
		}
	}
	return c
}

// Validate checks the configuration and returns a *ConfigError naming the
// field at fault and how to fix it.
func (c SourceConfig) Validate() error {
	bad := func(field, format string, args ...any) error {
		return &ConfigError{Kind: "source", Operator: c.Name, Field: field, Problem: fmt.Sprintf(format, args...)}
	}
	if err := sdk.ValidName(c.Name); err != nil {
		return bad("Name", "%v", err)
	}
	if err := sdk.ValidName(c.Stream); err != nil {
		return bad("Stream", "%v", err)
	}
	if err := validPath(c.Path, "stdin"); err != nil {
		return bad("Path", "%v", err)
	}
	if c.Parallelism != 0 && c.Parallelism != 1 {
		return bad("Parallelism", "must be 0 or 1 (a file is read by one instance), got %d", c.Parallelism)
	}
	if c.Batch < 0 {
		return bad("Batch", "must be ≥ 0, got %d", c.Batch)
	}
	if c.MaxLineSize < 0 {
		return bad("MaxLineSize", "must be ≥ 0, got %d", c.MaxLineSize)
	}
	return nil
}

// Format says how a sink writes a record as a line.
type Format int

// Formats.
const (
	// FormatValue writes the value only (the zero value).
	FormatValue Format = iota
	// FormatKeyValue writes the key, a tab, then the value.
	FormatKeyValue
)

// String returns "value" or "key-value".
func (f Format) String() string {
	switch f {
	case FormatValue:
		return "value"
	case FormatKeyValue:
		return "key-value"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// ParseFormat parses "value" or "key-value" (as in flags and environment
// variables); "" means "value".
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "value":
		return FormatValue, nil
	case "key-value", "keyvalue", "key_value", "kv":
		return FormatKeyValue, nil
	}
	return 0, fmt.Errorf("file: unknown format %q: want value or key-value", s)
}

// SinkConfig configures a line sink. Zero fields take the defaults above;
// Validate names the first field that is wrong.
type SinkConfig struct {
	// Name is the operator's name (and kind); required.
	Name string
	// Stream is the input stream; required.
	Stream string
	// Routing routes Stream to the instances; the zero value means
	// sdk.Shuffle. With sdk.Broadcast every instance writes every record,
	// so each line appears Parallelism times.
	Routing sdk.Routing
	// Path is the file appended to (created with Perm if missing), or "-"
	// (Stdio) for stdout; required. A relative path is made absolute when
	// the sink is created.
	Path string
	// Format says how a record becomes a line.
	Format Format
	// Parallelism is the number of instances; 0 means 1. The instances of
	// all sinks in a process that write one path share one file and one
	// lock, and write whole lines only, so their lines never interleave.
	Parallelism int
	// BufferSize is the number of bytes an instance buffers before it
	// writes them; a single longer line is buffered alone.
	BufferSize int
	// Perm is the permission of a file the sink creates; 0 means 0644.
	Perm os.FileMode
	// Stdout is what the path "-" writes; nil means os.Stdout. Writes to
	// it are serialised by a lock shared by every sink in the process.
	Stdout io.Writer
}

func (c SinkConfig) withDefaults() SinkConfig {
	if c.Routing == 0 {
		c.Routing = sdk.Shuffle
	}
	if c.BufferSize == 0 {
		c.BufferSize = DefaultBufferSize
	}
	if c.Perm == 0 {
		c.Perm = DefaultPerm
	}
	if c.Path != Stdio {
		if abs, err := filepath.Abs(c.Path); err == nil {
			c.Path = abs
		}
	}
	return c
}

// Validate checks the configuration and returns a *ConfigError naming the
// field at fault and how to fix it.
func (c SinkConfig) Validate() error {
	bad := func(field, format string, args ...any) error {
		return &ConfigError{Kind: "sink", Operator: c.Name, Field: field, Problem: fmt.Sprintf(format, args...)}
	}
	if err := sdk.ValidName(c.Name); err != nil {
		return bad("Name", "%v", err)
	}
	if err := sdk.ValidName(c.Stream); err != nil {
		return bad("Stream", "%v", err)
	}
	if c.Routing < 0 || c.Routing > sdk.Broadcast {
		return bad("Routing", "unknown routing %d: want sdk.Shuffle, sdk.RoundRobin, sdk.GroupBy or sdk.Broadcast", int(c.Routing))
	}
	if err := validPath(c.Path, "stdout"); err != nil {
		return bad("Path", "%v", err)
	}
	if c.Format != FormatValue && c.Format != FormatKeyValue {
		return bad("Format", "unknown format %d: want FormatValue or FormatKeyValue", int(c.Format))
	}
	if c.Parallelism < 0 {
		return bad("Parallelism", "must be ≥ 0, got %d", c.Parallelism)
	}
	if c.BufferSize < 0 {
		return bad("BufferSize", "must be ≥ 0, got %d", c.BufferSize)
	}
	if c.Perm&^os.ModePerm != 0 {
		return bad("Perm", "must be permission bits (at most 0777), got %#o", c.Perm)
	}
	return nil
}

// validPath checks a source's or sink's Path; std names what "-" means.
func validPath(p, std string) error {
	switch {
	case p == "":
		return fmt.Errorf("is required: give a file name, or %q for %s", Stdio, std)
	case strings.IndexByte(p, 0) >= 0:
		return fmt.Errorf("%q contains a NUL byte", p)
	case p != Stdio:
		if _, err := filepath.Abs(p); err != nil {
			return fmt.Errorf("%q: %v", p, err)
		}
	}
	return nil
}
