package core

import (
	"fmt"
	"strings"
	"time"
)

// WindowType is a kind of windows (WindowSpec.Type).
type WindowType uint8

// Window types. The zero value means unset.
const (
	// WindowTumbling: event-time windows of Size, back to back.
	WindowTumbling WindowType = iota + 1
	// WindowHopping: event-time windows of Size starting every Slide.
	WindowHopping
	// WindowSession: event-time windows of a key's records less than Gap
	// apart.
	WindowSession
	// WindowCount: windows of Count records per key.
	WindowCount
	// WindowGlobal: one window per key, closed at end-of-stream.
	WindowGlobal
)

var windowTypeNames = [...]string{0: "unset", WindowTumbling: "tumbling", WindowHopping: "hopping", WindowSession: "session",
	WindowCount: "count", WindowGlobal: "global"}

// String returns the type's name as used in manifests ("tumbling").
func (t WindowType) String() string {
	if int(t) < len(windowTypeNames) {
		return windowTypeNames[t]
	}
	return fmt.Sprintf("WindowType(%d)", int(t))
}

// EventTime reports whether windows of this type are event-time windows
// (closed by the watermark, with lateness): tumbling, hopping and session.
func (t WindowType) EventTime() bool {
	return t == WindowTumbling || t == WindowHopping || t == WindowSession
}

// ParseWindowType parses a window type's name.
func ParseWindowType(s string) (WindowType, error) {
	for t := WindowTumbling; t <= WindowGlobal; t++ {
		if strings.EqualFold(strings.TrimSpace(s), t.String()) {
			return t, nil
		}
	}
	return 0, fmt.Errorf("unknown window type %q: want tumbling, hopping, session, count or global", s)
}

// MarshalText encodes the type by name, as in manifests and JSON.
func (t WindowType) MarshalText() ([]byte, error) {
	if t > WindowGlobal {
		return nil, fmt.Errorf("unknown window type %d", int(t))
	}
	return []byte(t.String()), nil
}

// UnmarshalText decodes a type's name ("unset" for the zero value).
func (t *WindowType) UnmarshalText(b []byte) error {
	if string(b) == windowTypeNames[0] {
		*t = 0
		return nil
	}
	v, err := ParseWindowType(string(b))
	if err != nil {
		return err
	}
	*t = v
	return nil
}

// WindowEmit says when a window's result is produced (WindowSpec.Emit).
type WindowEmit uint8

// Emit modes. The zero value is EmitOnClose.
const (
	// EmitOnClose produces a window's result once, when it closes, and
	// again for each late record accepted within the lateness.
	EmitOnClose WindowEmit = iota
	// EmitOnUpdate produces the window's result after every record added.
	EmitOnUpdate
)

// String returns "on-close" or "on-update".
func (e WindowEmit) String() string {
	switch e {
	case EmitOnClose:
		return "on-close"
	case EmitOnUpdate:
		return "on-update"
	}
	return fmt.Sprintf("Emit(%d)", uint8(e))
}

// ParseWindowEmit parses "on-close" or "on-update".
func ParseWindowEmit(s string) (WindowEmit, error) {
	for _, e := range []WindowEmit{EmitOnClose, EmitOnUpdate} {
		if strings.EqualFold(strings.TrimSpace(s), e.String()) {
			return e, nil
		}
	}
	return 0, fmt.Errorf("unknown emit mode %q: want on-close or on-update", s)
}

// MarshalText encodes the mode by name.
func (e WindowEmit) MarshalText() ([]byte, error) {
	if e > EmitOnUpdate {
		return nil, fmt.Errorf("unknown emit mode %d", uint8(e))
	}
	return []byte(e.String()), nil
}

// UnmarshalText decodes a mode's name.
func (e *WindowEmit) UnmarshalText(b []byte) error {
	v, err := ParseWindowEmit(string(b))
	if err != nil {
		return err
	}
	*e = v
	return nil
}

// MaxWindowsPerRecord bounds Size/Slide of hopping windows: a record is
// added to that many windows.
const MaxWindowsPerRecord = 10000

// WindowSpec is a window operator's windows (Metadata.Window): a window
// operator (sdk/window) declares the windows it was built with, a manifest
// may change them, and every instance runs with the spec deployed
// (InstanceInfo.Window). Only the fields of its Type may be set.
type WindowSpec struct {
	// Type is the kind of windows (required).
	Type WindowType `json:"type"`
	// Size of tumbling and hopping windows (> 0).
	Size time.Duration `json:"size,omitempty"`
	// Slide of hopping windows: a window starts every Slide (> 0, ≤ Size).
	Slide time.Duration `json:"slide,omitempty"`
	// Gap of session windows (> 0).
	Gap time.Duration `json:"gap,omitempty"`
	// Count of records of count windows (> 0).
	Count int64 `json:"count,omitempty"`
	// Lateness is how long after a window's end late records are still
	// added to it (≥ 0; event-time windows only).
	Lateness time.Duration `json:"lateness,omitempty"`
	// Emit says when results are produced.
	Emit WindowEmit `json:"emit,omitempty"`
}

// Equal reports whether w and o are the same spec (both nil, or equal
// fields).
func (w *WindowSpec) Equal(o *WindowSpec) bool {
	if w == nil || o == nil {
		return w == o
	}
	return *w == *o
}

// String describes the windows, e.g. "tumbling(10s)" or
// "hopping(1m every 10s), lateness 5s, on-update".
func (w WindowSpec) String() string {
	var s string
	switch w.Type {
	case WindowTumbling:
		s = fmt.Sprintf("tumbling(%v)", w.Size)
	case WindowHopping:
		s = fmt.Sprintf("hopping(%v every %v)", w.Size, w.Slide)
	case WindowSession:
		s = fmt.Sprintf("session(gap %v)", w.Gap)
	case WindowCount:
		s = fmt.Sprintf("count(%d)", w.Count)
	default:
		s = w.Type.String()
	}
	if w.Lateness != 0 {
		s += fmt.Sprintf(", lateness %v", w.Lateness)
	}
	if w.Emit != EmitOnClose {
		s += ", " + w.Emit.String()
	}
	return s
}

// WindowError reports a bad WindowSpec field.
type WindowError struct {
	Field   string // "type", "size", "slide", "gap", "count", "lateness" or "emit"
	Problem string // what is wrong and what is allowed
}

// Error returns e.g. "window.size: must be > 0, got 0s".
func (e *WindowError) Error() string { return "window." + e.Field + ": " + e.Problem }

// Validate returns a *WindowError for the first problem of w (see
// Problems), or nil.
func (w WindowSpec) Validate() error {
	if ps := w.Problems(); len(ps) > 0 {
		return ps[0]
	}
	return nil
}

// Problems lists every bad field of w: the rules of windows, kept here
// for the window operators built in Go (sdk/window) and the manifests that
// change them alike. A size, slide, gap or count must be > 0 where its type
// has one and unset where it has none; a slide ≤ size, with size/slide ≤
// MaxWindowsPerRecord; lateness ≥ 0, and only on event-time windows.
func (w WindowSpec) Problems() []*WindowError {
	var ps []*WindowError
	bad := func(field, format string, args ...any) {
		ps = append(ps, &WindowError{Field: field, Problem: fmt.Sprintf(format, args...)})
	}
	// Which of size, slide, gap and count the type has.
	var has [4]bool
	switch w.Type {
	case 0:
		bad("type", "not set: want tumbling, hopping, session, count or global")
	case WindowTumbling:
		has[0] = true
	case WindowHopping:
		has[0], has[1] = true, true
	case WindowSession:
		has[2] = true
	case WindowCount:
		has[3] = true
	case WindowGlobal:
	default:
		bad("type", "unknown window type %d: want tumbling, hopping, session, count or global", int(w.Type))
	}
	for i, f := range []struct {
		name string
		set  bool
		v    any
		pos  bool
	}{{"size", w.Size != 0, w.Size, w.Size > 0}, {"slide", w.Slide != 0, w.Slide, w.Slide > 0},
		{"gap", w.Gap != 0, w.Gap, w.Gap > 0}, {"count", w.Count != 0, w.Count, w.Count > 0}} {
		switch {
		case has[i] && !f.pos:
			bad(f.name, "must be > 0, got %v", f.v)
		case !has[i] && f.set && w.Type != 0 && w.Type <= WindowGlobal:
			bad(f.name, "%v windows have no %s: remove it%s", w.Type, f.name, windowHint(w.Type, f.name))
		}
	}
	if w.Type == WindowHopping && w.Size > 0 && w.Slide > 0 {
		switch {
		case w.Slide > w.Size:
			bad("slide", "must be ≤ size (%v), got %v: windows would leave gaps", w.Size, w.Slide)
		case w.Size/w.Slide > MaxWindowsPerRecord:
			bad("slide", "size/slide must be ≤ %d (each record is added to that many windows), got %v/%v", MaxWindowsPerRecord, w.Size, w.Slide)
		}
	}
	switch {
	case w.Lateness < 0:
		bad("lateness", "must be ≥ 0, got %v", w.Lateness)
	case w.Lateness > 0 && !w.Type.EventTime() && w.Type != 0:
		bad("lateness", "only event-time windows (tumbling, hopping, session) have lateness, not %v", w.Type)
	}
	if w.Emit > EmitOnUpdate {
		bad("emit", "unknown mode %v: want on-close or on-update", w.Emit)
	}
	return ps
}

// windowHint suggests the type a misplaced field belongs to.
func windowHint(t WindowType, field string) string {
	switch {
	case field == "slide" && t == WindowTumbling:
		return " (or use type hopping)"
	case field == "gap":
		return " (gap is for type session)"
	case field == "count":
		return " (count is for type count)"
	}
	return ""
}
