package actors

import (
	"fmt"

	"github.com/sluicehq/sluice/internal/core"
)

// OperatorSpec is one deployed operator: which implementation runs it, its
// metadata (with defaults applied) and its layout epoch, which grows by one
// on every rescale so that instances of different layouts never share an
// identity.
type OperatorSpec struct {
	// Kind names the implementation; a node can host the operator if it has
	// a factory for the kind.
	Kind string
	// Meta is the operator's metadata; Meta.Parallelism is the current
	// number of instances.
	Meta core.Metadata
	// Epoch identifies the current layout (parallelism) of the operator.
	Epoch int64
}

// Topology is the set of deployed operators.
type Topology struct {
	// Version grows with every change.
	Version int64
	// Operators in deployment order.
	Operators []OperatorSpec
}

// Validate checks every operator's metadata and that names are unique.
func (t Topology) Validate() error {
	seen := make(map[string]int)
	for i, op := range t.Operators {
		if err := op.Meta.Validate(); err != nil {
			return err
		}
		if j, dup := seen[op.Meta.Name]; dup {
			return &core.MetadataError{Operator: op.Meta.Name, Field: "name",
				Problem: fmt.Sprintf("duplicate: operators #%d and #%d are both named %q", j, i, op.Meta.Name)}
		}
		seen[op.Meta.Name] = i
		if op.Kind == "" {
			return &core.MetadataError{Operator: op.Meta.Name, Field: "kind", Problem: "must not be empty"}
		}
	}
	return nil
}

// find returns the spec of the named operator.
func (t Topology) find(name string) (OperatorSpec, bool) {
	for _, op := range t.Operators {
		if op.Meta.Name == name {
			return op, true
		}
	}
	return OperatorSpec{}, false
}

// instKey identifies an operator instance in one layout.
type instKey struct {
	op    string
	epoch int64
	index int
}

func (k instKey) String() string { return fmt.Sprintf("%s/%d.%d", k.op, k.epoch, k.index) }

// pidID returns the actor id of instance k: "op/<name>/<epoch>.<index>".
func (k instKey) pidID() string { return "op/" + k.String() }
