package core

import (
	"fmt"
	"strings"
)

// Guarantee is what a crash may cost a pipeline: see README "Guarantees".
type Guarantee uint8

// The guarantees.
const (
	// ExactlyOnce: every record's effects on state and on Committer sinks
	// happen once, across crashes, by consistent checkpoints (aligned
	// barriers) kept in the checkpoint store and two-phase commit.
	ExactlyOnce Guarantee = iota
	// AtLeastOnce: nothing is lost across crashes; replayed records may
	// be applied twice.
	AtLeastOnce
	// NoGuarantee: a crash loses the records in flight and the state not
	// yet committed (at most one commit interval).
	NoGuarantee
)

// String returns the name used in configuration: "exactly-once",
// "at-least-once" or "none".
func (g Guarantee) String() string {
	switch g {
	case ExactlyOnce:
		return "exactly-once"
	case AtLeastOnce:
		return "at-least-once"
	case NoGuarantee:
		return "none"
	}
	return fmt.Sprintf("Guarantee(%d)", uint8(g))
}

// ParseGuarantee parses "exactly-once", "at-least-once" or "none".
func ParseGuarantee(s string) (Guarantee, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "exactly-once":
		return ExactlyOnce, nil
	case "at-least-once":
		return AtLeastOnce, nil
	case "none":
		return NoGuarantee, nil
	}
	return 0, fmt.Errorf("unknown guarantee %q: want exactly-once, at-least-once or none", s)
}

// MarshalText implements encoding.TextMarshaler.
func (g Guarantee) MarshalText() ([]byte, error) { return []byte(g.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (g *Guarantee) UnmarshalText(b []byte) error {
	v, err := ParseGuarantee(string(b))
	if err != nil {
		return err
	}
	*g = v
	return nil
}
