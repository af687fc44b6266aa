package window

import (
	"fmt"
	"math"
	"time"

	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/sdk"
)

// EndOfTime is the watermark after end-of-stream: it passes every event
// time (the runtime's watermark once every input has ended).
var EndOfTime = time.Unix(0, math.MaxInt64)

// kind is a kind of windows: the type of a deployed spec.
type kind = core.WindowType

const (
	kindUnset    kind = 0
	kindTumbling      = core.WindowTumbling
	kindHopping       = core.WindowHopping
	kindSession       = core.WindowSession
	kindCount         = core.WindowCount
	kindGlobal        = core.WindowGlobal
)

// Windows says how the records of a key are grouped into windows. Build
// one with Tumbling, Hopping, Session, CountOf or Global; Config.Validate
// checks the sizes.
type Windows struct {
	kind             kind
	size, slide, gap time.Duration
	count            int64
}

// Tumbling returns event-time windows of size, back to back and aligned on
// the Unix epoch: [0, size), [size, 2·size), …; each record is in one.
func Tumbling(size time.Duration) Windows { return Windows{kind: kindTumbling, size: size} }

// Hopping returns event-time windows of size starting every slide
// (aligned on the Unix epoch); a record is in about size/slide of them.
// Hopping(size, size) is Tumbling(size). Flink calls them sliding windows.
func Hopping(size, slide time.Duration) Windows {
	return Windows{kind: kindHopping, size: size, slide: slide}
}

// Session returns event-time session windows: a key's records less than
// gap apart (in event time) are in one window, [first, last+gap); a record
// that bridges two sessions merges them.
func Session(gap time.Duration) Windows { return Windows{kind: kindSession, gap: gap} }

// CountOf returns windows of n records per key, in arrival order: a window
// closes with its nth record. An incomplete window is never emitted in
// OnClose mode (as in Flink); in OnUpdate mode each record emits its
// window so far.
func CountOf(n int64) Windows { return Windows{kind: kindCount, count: n} }

// Global returns one window per key that closes at end-of-stream: use it
// with OnUpdate for a running aggregate, or with OnClose (bounded input)
// for one result per key at the end.
func Global() Windows { return Windows{kind: kindGlobal} }

// Fixed returns the size and slide of tumbling windows (slide = size) or
// hopping windows, and false for the other kinds: for operators that
// group records into the same windows as the window operator does (the
// window join of sdk/stream). It does not check the sizes (Validate does).
func (w Windows) Fixed() (size, slide time.Duration, ok bool) {
	switch w.kind {
	case kindTumbling:
		return w.size, w.size, true
	case kindHopping:
		return w.size, w.slide, true
	}
	return 0, 0, false
}

// String describes the windows, e.g. "tumbling(10s)".
func (w Windows) String() string { return Config{Windows: w}.spec().String() }

// Emit says when a window's result is produced; its String is
// "on-close" or "on-update".
type Emit = core.WindowEmit

const (
	// OnClose (the default) produces a window's result once, when the
	// watermark passes its end (count windows: with its last record), and
	// again for each late record accepted within the allowed lateness.
	OnClose = core.EmitOnClose
	// OnUpdate produces the window's result after every record added to
	// it.
	OnUpdate = core.EmitOnUpdate
)

// MaxWindowsPerRecord bounds size/slide of hopping windows: a record is
// added to that many windows.
const MaxWindowsPerRecord = core.MaxWindowsPerRecord

// Config describes a window operator.
type Config struct {
	// Name is the operator's name.
	Name string
	// Input is the stream read, with group-by routing: windows are kept per
	// record key.
	Input string
	// Output is the stream the results go to: one record per window
	// result, keyed by the record key, the aggregate's Result as value,
	// and for event-time windows the bounds in the HeaderStart and
	// HeaderEnd headers (see Bounds) and an event time of end − 1 ns.
	Output string
	// Result, when set, rewrites each event-time window's result record
	// before it is produced: rec has the window's key and the
	// aggregator's Result as value; return a record with another key (to
	// regroup results by window downstream) or value. Its event time, if
	// left zero, and the bound headers are set afterwards.
	Result func(rec sdk.Record, start, end time.Time) sdk.Record
	// Windows is the kind of windows (required).
	Windows Windows
	// Lateness is how long after a window's end (in event time) records
	// are still added to it, each producing an updated result; a record
	// later than that goes to the "<Name>.late" stream. The window's
	// state and timer are removed when the watermark passes end+Lateness.
	// Only for event-time windows; default 0.
	Lateness time.Duration
	// Emit says when results are produced (default OnClose).
	Emit Emit
	// CacheWindows bounds the number of State entries (a key's tumbling
	// or hopping windows, or one count or global window; sessions are not
	// cached) whose accumulators an instance keeps decoded in memory,
	// besides State, so that a record costs a map lookup rather than a
	// State read. When it is full, a quarter of the entries are dropped
	// from memory (they are in State) and their keys remembered, up to 4 ×
	// CacheWindows of them (beyond, every miss reads State). Memory is
	// about CacheWindows × (key + its windows' accumulators + ~100 bytes);
	// 0 means DefaultCacheWindows.
	CacheWindows int
	// Parallelism, KeyGroups and Restart are the operator's (see
	// sdk.Metadata); zero means the defaults.
	Parallelism, KeyGroups int
	Restart                sdk.RestartPolicy
}

// LateStream returns the stream that records too late for every window
// they belong to go to: "<operator>.late".
func LateStream(operator string) string { return operator + ".late" }

// ConfigError reports a bad Config field.
type ConfigError struct {
	Operator string // the operator's name
	Field    string // e.g. "windows.size"
	Problem  string // what is wrong and what is allowed
}

// Error returns e.g. `window operator "counts": windows.size: must be > 0, got 0s`.
func (e *ConfigError) Error() string {
	return fmt.Sprintf("window operator %q: %s: %s", e.Operator, e.Field, e.Problem)
}

// Validate checks c and returns a *ConfigError naming the first bad field
// (or the *sdk.MetadataError of the operator's metadata).
func (c Config) Validate() error {
	bad := func(field, format string, args ...any) error {
		return &ConfigError{Operator: c.Name, Field: field, Problem: fmt.Sprintf(format, args...)}
	}
	for _, f := range []struct{ field, v string }{{"name", c.Name}, {"input", c.Input}, {"output", c.Output}} {
		if err := sdk.ValidName(f.v); err != nil {
			return bad(f.field, "%v", err)
		}
	}
	if c.Windows.kind == kindUnset {
		return bad("windows", "not set: use window.Tumbling, Hopping, Session, CountOf or Global")
	}
	if ps := c.spec().Problems(); len(ps) > 0 { // the rules a manifest's windows follow too
		return bad(configField(ps[0].Field), "%s", ps[0].Problem)
	}
	if c.CacheWindows < 0 {
		return bad("cache-windows", "must be ≥ 0 (0: %d), got %d", DefaultCacheWindows, c.CacheWindows)
	}
	m := c.metadata().WithDefaults()
	return m.Validate()
}

// configField names a WindowSpec field as a Config field.
func configField(f string) string {
	switch f {
	case "lateness", "emit":
		return f
	case "type":
		return "windows"
	}
	return "windows." + f
}

// spec returns the windows of c as deployed.
func (c Config) spec() core.WindowSpec {
	w := c.Windows
	return core.WindowSpec{Type: w.kind, Size: w.size, Slide: w.slide, Gap: w.gap, Count: w.count, Lateness: c.Lateness, Emit: c.Emit}
}

// deployed returns c running the windows of s (a deployed spec, which a
// manifest may have changed).
func (c Config) deployed(s core.WindowSpec) Config {
	c.Windows = Windows{kind: s.Type, size: s.Size, slide: s.Slide, gap: s.Gap, count: s.Count}
	c.Lateness, c.Emit = s.Lateness, s.Emit
	return c
}

// metadata returns the operator's metadata: its windows, and the late
// stream as an output whatever they are, so that a manifest may change
// them to event-time windows.
func (c Config) metadata() sdk.Metadata {
	spec := c.spec()
	return sdk.Metadata{Name: c.Name, Inputs: []sdk.Input{{Stream: c.Input, Routing: sdk.GroupBy}}, Outputs: []string{c.Output, LateStream(c.Name)},
		Parallelism: c.Parallelism, KeyGroups: c.KeyGroups, Restart: c.Restart, Window: &spec}
}
