package actors

import "fmt"

// instKey identifies an operator instance in one layout.
type instKey struct {
	op    string
	epoch int64
	index int
}

func (k instKey) String() string { return fmt.Sprintf("%s/%d.%d", k.op, k.epoch, k.index) }

// pidID returns the actor id of instance k: "op/<name>/<epoch>.<index>".
func (k instKey) pidID() string { return "op/" + k.String() }
