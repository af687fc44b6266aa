package flow

import "github.com/sluicehq/sluice/internal/core"

// Table maps each stream to the operators subscribed to it, with the
// current destination of each instance. It is immutable once published;
// every placement or topology change publishes a new Table with a higher
// Version.
type Table struct {
	Version uint64
	Streams map[string][]*Subscription
	// Live holds the actor addresses of the live nodes: batches in flight
	// to any other address are given up (the node crashed).
	Live map[string]bool
	// Local is this node's actor address.
	Local string
}

// Subscription is one operator's subscription to one stream.
type Subscription struct {
	Stream    string
	Operator  string
	Epoch     int64
	Routing   core.Routing
	KeyGroups int
	// Dests lists the destination of each instance by index; nil where no
	// node hosts the instance (records wait in its buffer).
	Dests []Dest
}

// Routes returns the subscriptions of stream (nil if none).
func (t *Table) Routes(stream string) []*Subscription {
	if t == nil {
		return nil
	}
	return t.Streams[stream]
}

// SameLayout reports whether a and b deliver to the same instances.
func SameLayout(a, b *Subscription) bool {
	if a.Epoch != b.Epoch || a.KeyGroups != b.KeyGroups || len(a.Dests) != len(b.Dests) {
		return false
	}
	for i := range a.Dests {
		if !sameDest(a.Dests[i], b.Dests[i]) {
			return false
		}
	}
	return true
}

func sameDest(a, b Dest) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Endpoint() == b.Endpoint()
}
