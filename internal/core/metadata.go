package core

import (
	"fmt"
	"strings"
	"time"
)

// Metadata describes an operator: its name, the streams it reads and
// writes, how many instances run and how failures are handled.
type Metadata struct {
	// Name identifies the operator; it must be unique in a runtime and may
	// contain letters, digits, '-', '_' and '.', starting with a letter or a
	// digit (see ValidName).
	Name string
	// Inputs are the streams the operator subscribes to, each with its
	// routing. An operator with no inputs is a source (see Source).
	Inputs []Input
	// Outputs are the streams the operator may produce to.
	Outputs []string
	// Parallelism is the number of instances; 0 means 1.
	Parallelism int
	// KeyGroups is the number of key groups that keys (and state) are
	// hashed into; 0 means 256. It is fixed when the operator is first
	// created and bounds its useful parallelism.
	KeyGroups int
	// Restart says how failures are handled; zero fields take defaults.
	Restart RestartPolicy
	// Watermarks, on a source, makes it emit watermarks derived from the
	// event times of the records it produces (see WatermarkStrategy); nil
	// means none: an event-time operator downstream then waits for ever.
	Watermarks *WatermarkStrategy `json:",omitempty"`
	// Window, on a window operator (sdk/window), is its windows; a
	// manifest may change them only on an operator whose kind declares
	// them, and they are fixed once deployed. nil on other operators.
	Window *WindowSpec `json:",omitempty"`
	// Autoscale turns on the autoscaler for the operator, within its
	// bounds (see AutoscaleSpec); nil means off: the parallelism changes
	// only when someone scales it.
	Autoscale *AutoscaleSpec `json:",omitempty"`
	// Runtime is what runs the operator: RuntimeGo (empty: a kind compiled
	// into the node) or RuntimeWasm (the WebAssembly module Module).
	Runtime Runtime `json:",omitempty"`
	// Module is the path of a wasm operator's .wasm file, the same on
	// every node that runs wasm operators; empty for other runtimes.
	Module string `json:",omitempty"`
}

// Input is one subscription: a stream and how its records are routed to the
// operator's instances.
type Input struct {
	Stream  string  `json:"stream"`
	Routing Routing `json:"routing"`
}

// Routing says which instance of a subscribing operator receives a record.
type Routing int

// Routings. The zero value means Shuffle.
const (
	// Shuffle sends each record to an instance picked at random.
	Shuffle Routing = iota + 1
	// RoundRobin sends records to the instances in turn, per producer.
	RoundRobin
	// GroupBy hashes the record key to a key group; each key group belongs to
	// one instance, so records with the same key reach the same instance in
	// the order they were produced.
	GroupBy
	// Broadcast sends every record to every instance.
	Broadcast
)

var routingNames = [...]string{Shuffle: "shuffle", RoundRobin: "round-robin", GroupBy: "group-by", Broadcast: "broadcast"}

// String returns the routing's name as used in manifests.
func (r Routing) String() string {
	if r == 0 {
		return routingNames[Shuffle] // unset means shuffle
	}
	if r >= Shuffle && int(r) < len(routingNames) {
		return routingNames[r]
	}
	return fmt.Sprintf("Routing(%d)", int(r))
}

// ParseRouting parses a routing name ("shuffle", "round-robin", "group-by",
// "broadcast"; "roundrobin", "groupby" and "" for shuffle are accepted too).
func ParseRouting(s string) (Routing, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "shuffle":
		return Shuffle, nil
	case "round-robin", "roundrobin", "round_robin":
		return RoundRobin, nil
	case "group-by", "groupby", "group_by":
		return GroupBy, nil
	case "broadcast":
		return Broadcast, nil
	}
	return 0, fmt.Errorf("unknown routing %q: want shuffle, round-robin, group-by or broadcast", s)
}

// RestartPolicy says how an instance's failures are handled. A failed
// attempt restarts the instance after a backoff that doubles with each
// failure, from InitialBackoff up to MaxBackoff, and starts over once a
// record, timer or Poll succeeds (or after a failure-free Window). A record
// or timer that failed DeadLetterAfter times goes to the dead-letter stream.
//
// More than MaxRestarts failures that count within Window mark the instance
// failed: it stops processing and routes what it receives to the dead-letter
// stream, while the rest of the runtime keeps running. The failures of a
// poison record do not count once it is dead-lettered and the next record
// succeeds; failures in Init or Poll, of records that later succeed, and of
// records dead-lettered one after another with no success between them do.
type RestartPolicy struct {
	// MaxRestarts is the number of failures that count (see above) allowed
	// within Window; 0 means 10.
	MaxRestarts int
	// Window is the period over which restarts are counted; 0 means 1 minute.
	Window time.Duration
	// InitialBackoff is the delay before the first restart; 0 means 10 ms.
	InitialBackoff time.Duration
	// MaxBackoff caps the delay; 0 means 5 s.
	MaxBackoff time.Duration
	// DeadLetterAfter is the number of failed attempts after which a record
	// or timer goes to the "<operator>.deadletter" stream and processing
	// continues; 0 means 3.
	DeadLetterAfter int
}

// Defaults for Metadata and RestartPolicy fields left zero.
const (
	DefaultParallelism     = 1
	DefaultKeyGroups       = 256
	MaxKeyGroups           = 1 << 15
	DefaultMaxRestarts     = 10
	DefaultRestartWindow   = time.Minute
	DefaultInitialBackoff  = 10 * time.Millisecond
	DefaultMaxBackoff      = 5 * time.Second
	DefaultDeadLetterAfter = 3
)

// DeadLetterStream returns the name of operator's dead-letter stream.
func DeadLetterStream(operator string) string { return operator + deadLetterSuffix }

// deadLetterSuffix ends every dead-letter stream's name.
const deadLetterSuffix = ".deadletter"

// IsDeadLetterStream reports whether stream is an operator's dead-letter
// stream.
func IsDeadLetterStream(stream string) bool { return strings.HasSuffix(stream, deadLetterSuffix) }

// WithDefaults returns m with every zero field set to its default.
func (m Metadata) WithDefaults() Metadata {
	if m.Parallelism == 0 {
		m.Parallelism = DefaultParallelism
	}
	if m.KeyGroups == 0 {
		m.KeyGroups = DefaultKeyGroups
	}
	in := make([]Input, len(m.Inputs))
	for i, x := range m.Inputs {
		if x.Routing == 0 {
			x.Routing = Shuffle
		}
		in[i] = x
	}
	m.Inputs = in
	m.Outputs = append([]string(nil), m.Outputs...)
	m.Restart = m.Restart.WithDefaults()
	if m.Watermarks != nil {
		w := *m.Watermarks
		if w.Interval == 0 {
			w.Interval = DefaultWatermarkInterval
		}
		m.Watermarks = &w
	}
	if m.Window != nil {
		w := *m.Window
		m.Window = &w
	}
	if m.Autoscale != nil {
		a := *m.Autoscale
		m.Autoscale = &a
	}
	return m
}

// WithDefaults returns p with every zero field set to its default.
func (p RestartPolicy) WithDefaults() RestartPolicy {
	if p.MaxRestarts == 0 {
		p.MaxRestarts = DefaultMaxRestarts
	}
	if p.Window == 0 {
		p.Window = DefaultRestartWindow
	}
	if p.InitialBackoff == 0 {
		p.InitialBackoff = DefaultInitialBackoff
	}
	if p.MaxBackoff == 0 {
		p.MaxBackoff = DefaultMaxBackoff
	}
	if p.DeadLetterAfter == 0 {
		p.DeadLetterAfter = DefaultDeadLetterAfter
	}
	return p
}

// MetadataError reports an invalid Metadata field.
type MetadataError struct {
	Operator string // the operator's name, or its position if the name is empty
	Field    string // e.g. "parallelism" or "inputs[1].routing"
	Problem  string // what is wrong and what is allowed
}

// Error returns e.g. `operator "count": parallelism: must be ≥ 1, got 0`.
func (e *MetadataError) Error() string {
	return fmt.Sprintf("operator %q: %s: %s", e.Operator, e.Field, e.Problem)
}

// Validate checks m (after WithDefaults) and returns a *MetadataError for the
// first problem found.
func (m Metadata) Validate() error {
	bad := func(field, format string, args ...any) error {
		return &MetadataError{Operator: m.Name, Field: field, Problem: fmt.Sprintf(format, args...)}
	}
	if err := ValidName(m.Name); err != nil {
		return bad("name", "%v", err)
	}
	if m.Parallelism < 1 {
		return bad("parallelism", "must be ≥ 1, got %d", m.Parallelism)
	}
	if m.KeyGroups < 1 || m.KeyGroups > MaxKeyGroups {
		return bad("keyGroups", "must be between 1 and %d, got %d", MaxKeyGroups, m.KeyGroups)
	}
	if m.Parallelism > m.KeyGroups {
		return bad("parallelism", "must be ≤ keyGroups (%d), got %d", m.KeyGroups, m.Parallelism)
	}
	seen := map[string]bool{}
	for i, in := range m.Inputs {
		f := fmt.Sprintf("inputs[%d]", i)
		if err := ValidName(in.Stream); err != nil {
			return bad(f+".stream", "%v", err)
		}
		if seen[in.Stream] {
			return bad(f+".stream", "stream %q is listed twice", in.Stream)
		}
		seen[in.Stream] = true
		if in.Routing < Shuffle || in.Routing > Broadcast {
			return bad(f+".routing", "unknown routing %d: want shuffle, round-robin, group-by or broadcast", int(in.Routing))
		}
	}
	outs := map[string]bool{}
	for i, s := range m.Outputs {
		f := fmt.Sprintf("outputs[%d]", i)
		if err := ValidName(s); err != nil {
			return bad(f, "%v", err)
		}
		if outs[s] {
			return bad(f, "stream %q is listed twice", s)
		}
		outs[s] = true
	}
	p := m.Restart
	switch {
	case p.MaxRestarts < 0:
		return bad("restart.maxRestarts", "must be ≥ 0, got %d", p.MaxRestarts)
	case p.Window < 0:
		return bad("restart.window", "must be ≥ 0, got %v", p.Window)
	case p.InitialBackoff < 0:
		return bad("restart.initialBackoff", "must be ≥ 0, got %v", p.InitialBackoff)
	case p.MaxBackoff < p.InitialBackoff:
		return bad("restart.maxBackoff", "must be ≥ initialBackoff (%v), got %v", p.InitialBackoff, p.MaxBackoff)
	case p.DeadLetterAfter < 1:
		return bad("restart.deadLetterAfter", "must be ≥ 1, got %d", p.DeadLetterAfter)
	}
	if w := m.Watermarks; w != nil {
		switch {
		case w.OutOfOrderness < 0:
			return bad("watermarks.outOfOrderness", "must be ≥ 0 (0 for event times that never go back), got %v", w.OutOfOrderness)
		case w.Idleness < 0:
			return bad("watermarks.idleness", "must be ≥ 0 (0 for never idle), got %v", w.Idleness)
		case w.Interval < 0:
			return bad("watermarks.interval", "must be ≥ 0 (0 for the default, %v), got %v", DefaultWatermarkInterval, w.Interval)
		}
	}
	if w := m.Window; w != nil {
		if ps := w.Problems(); len(ps) > 0 {
			return bad("window."+ps[0].Field, "%s", ps[0].Problem)
		}
	}
	if a := m.Autoscale; a != nil {
		if field, problem := a.problem(m.KeyGroups); field != "" {
			return bad("autoscale."+field, "%s", problem)
		}
	}
	switch rt, err := ParseRuntime(string(m.Runtime)); {
	case err != nil:
		return bad("runtime", "%v", err)
	case rt == RuntimeWasm && m.Module == "":
		return bad("module", "a wasm operator needs the path of its .wasm file")
	case rt != RuntimeWasm && m.Module != "":
		return bad("module", "only a wasm operator has a module: set runtime: wasm, or remove module")
	}
	return nil
}

// MaxNameLen is the longest operator, stream or kind name, in bytes.
const MaxNameLen = 200

// ValidName checks an operator, stream or kind name: 1 to MaxNameLen
// characters from letters, digits, '-', '_' and '.', the first a letter or a
// digit.
//
// Names become URL path segments (/v1/operators/NAME), file names (a
// launched operator's directory) and command-line arguments (sluice kill
// NAME), so the rule keeps every name safe as each: "." and ".." (which a
// URL or a path resolves to the current or parent directory), names
// starting with '.' (hidden files), '-' (taken for a flag) or '_' are
// refused. A name that passes needs no escaping in a URL path, is its own
// path.Clean and filepath.Base, and never starts with '-'.
func ValidName(s string) error {
	if s == "" {
		return fmt.Errorf("must not be empty")
	}
	if len(s) > MaxNameLen {
		return fmt.Errorf("must be at most %d characters, got %d", MaxNameLen, len(s))
	}
	for _, c := range s {
		if !nameChar(c) {
			return fmt.Errorf("%q has %q: use letters, digits, '-', '_' and '.'", s, c)
		}
	}
	if c := rune(s[0]); !isAlnum(c) {
		return fmt.Errorf("%q starts with %q: start with a letter or a digit (names are used as URL path segments, file names and command-line arguments)", s, c)
	}
	return nil
}

// nameChar reports whether c may appear in a name.
func nameChar(c rune) bool { return isAlnum(c) || c == '-' || c == '_' || c == '.' }

// isAlnum reports whether c is an ASCII letter or digit.
func isAlnum(c rune) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// MarshalText encodes the routing by name, as in manifests and JSON. The
// zero value (unset) encodes as "shuffle", which it means.
func (r Routing) MarshalText() ([]byte, error) {
	if r == 0 {
		return []byte(Shuffle.String()), nil
	}
	if r < Shuffle || r > Broadcast {
		return nil, fmt.Errorf("unknown routing %d", int(r))
	}
	return []byte(r.String()), nil
}

// UnmarshalText decodes a routing name (see ParseRouting).
func (r *Routing) UnmarshalText(b []byte) error {
	v, err := ParseRouting(string(b))
	if err != nil {
		return err
	}
	*r = v
	return nil
}
