package window

import (
	"fmt"
	"math"
	"time"

	"github.com/sluicehq/sluice/sdk"
)

// EndOfTime is the watermark after end-of-stream: it passes every event
// time (the runtime's watermark once every input has ended).
var EndOfTime = time.Unix(0, math.MaxInt64)

// kind is a kind of windows.
type kind uint8

const (
	kindUnset kind = iota
	kindTumbling
	kindHopping
	kindSession
	kindCount
	kindGlobal
)

var kindNames = [...]string{kindUnset: "unset", kindTumbling: "tumbling", kindHopping: "hopping", kindSession: "session", kindCount: "count", kindGlobal: "global"}

// String returns the kind's name.
func (k kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// eventTime reports whether windows of this kind are event-time windows
// (closed by the watermark, with lateness).
func (k kind) eventTime() bool { return k == kindTumbling || k == kindHopping || k == kindSession }

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

// String describes the windows, e.g. "tumbling(10s)".
func (w Windows) String() string {
	switch w.kind {
	case kindTumbling:
		return fmt.Sprintf("tumbling(%v)", w.size)
	case kindHopping:
		return fmt.Sprintf("hopping(%v every %v)", w.size, w.slide)
	case kindSession:
		return fmt.Sprintf("session(gap %v)", w.gap)
	case kindCount:
		return fmt.Sprintf("count(%d)", w.count)
	}
	return w.kind.String()
}

// Emit says when a window's result is produced.
type Emit uint8

const (
	// OnClose (the default) produces a window's result once, when the
	// watermark passes its end (count windows: with its last record), and
	// again for each late record accepted within the allowed lateness.
	OnClose Emit = iota
	// OnUpdate produces the window's result after every record added to
	// it.
	OnUpdate
)

// String returns "on-close" or "on-update".
func (e Emit) String() string {
	switch e {
	case OnClose:
		return "on-close"
	case OnUpdate:
		return "on-update"
	}
	return fmt.Sprintf("Emit(%d)", uint8(e))
}

// MaxWindowsPerRecord bounds size/slide of hopping windows: a record is
// added to that many windows.
const MaxWindowsPerRecord = 10000

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
	w := c.Windows
	switch w.kind {
	case kindUnset:
		return bad("windows", "not set: use window.Tumbling, Hopping, Session, CountOf or Global")
	case kindTumbling:
		if w.size <= 0 {
			return bad("windows.size", "must be > 0, got %v", w.size)
		}
	case kindHopping:
		switch {
		case w.size <= 0:
			return bad("windows.size", "must be > 0, got %v", w.size)
		case w.slide <= 0:
			return bad("windows.slide", "must be > 0, got %v", w.slide)
		case w.slide > w.size:
			return bad("windows.slide", "must be ≤ size (%v), got %v: windows would leave gaps", w.size, w.slide)
		case w.size/w.slide > MaxWindowsPerRecord:
			return bad("windows.slide", "size/slide must be ≤ %d (each record is added to that many windows), got %v/%v", MaxWindowsPerRecord, w.size, w.slide)
		}
	case kindSession:
		if w.gap <= 0 {
			return bad("windows.gap", "must be > 0, got %v", w.gap)
		}
	case kindCount:
		if w.count <= 0 {
			return bad("windows.count", "must be > 0, got %d", w.count)
		}
	case kindGlobal:
	default:
		return bad("windows", "unknown kind %v", w.kind)
	}
	if c.Lateness < 0 {
		return bad("lateness", "must be ≥ 0, got %v", c.Lateness)
	}
	if c.Lateness > 0 && !w.kind.eventTime() {
		return bad("lateness", "only event-time windows (tumbling, hopping, session) have lateness, not %v", w.kind)
	}
	if c.CacheWindows < 0 {
		return bad("cache-windows", "must be ≥ 0 (0: %d), got %d", DefaultCacheWindows, c.CacheWindows)
	}
	if c.Emit != OnClose && c.Emit != OnUpdate {
		return bad("emit", "unknown mode %v: want OnClose or OnUpdate", c.Emit)
	}
	m := c.metadata().WithDefaults()
	return m.Validate()
}

// metadata returns the operator's metadata.
func (c Config) metadata() sdk.Metadata {
	outs := []string{c.Output}
	if c.Windows.kind.eventTime() {
		outs = append(outs, LateStream(c.Name))
	}
	return sdk.Metadata{Name: c.Name, Inputs: []sdk.Input{{Stream: c.Input, Routing: sdk.GroupBy}}, Outputs: outs,
		Parallelism: c.Parallelism, KeyGroups: c.KeyGroups, Restart: c.Restart}
}
