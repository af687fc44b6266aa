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

// GuaranteeError says why an operator cannot run under a guarantee.
type GuaranteeError struct {
	Operator  string
	Guarantee Guarantee
	Problem   string
}

func (e *GuaranteeError) Error() string {
	return fmt.Sprintf("operator %q cannot run %s: %s", e.Operator, e.Guarantee, e.Problem)
}

// CheckGuarantee reports whether op can take part in guarantee g: under
// ExactlyOnce every Source must be Resumable (its position lives in the
// checkpointed state) and every Flusher (a sink buffering output outside
// the runtime) must be a Committer (two-phase commit). The other
// guarantees accept every operator. The error is a *GuaranteeError.
func CheckGuarantee(op Operator, g Guarantee) error {
	if g != ExactlyOnce {
		return nil
	}
	name := op.Metadata().Name
	if _, ok := op.(Source); ok {
		if _, ok := op.(Resumable); !ok {
			return &GuaranteeError{Operator: name, Guarantee: g, Problem: "it is a source that cannot resume from a checkpoint " +
				"(it does not implement sdk.Resumable), so a crash would make it produce records again or skip them; " +
				"make it keep its position in State and implement Resumable, or run the pipeline at-least-once"}
		}
	}
	if _, ok := op.(Flusher); ok {
		if _, ok := op.(Committer); !ok {
			return &GuaranteeError{Operator: name, Guarantee: g, Problem: "it writes outside the runtime (sdk.Flusher) " +
				"without two-phase commit (sdk.Committer), so a crash would repeat its output; " +
				"implement Committer, or run the pipeline at-least-once"}
		}
	}
	return nil
}
