package actors

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicehq/sluice/internal/core"
)

// routeTable maps each stream to the operators subscribed to it, with the
// current PID of each instance. It is immutable once published; every
// placement or topology change publishes a new table with a higher version.
type routeTable struct {
	version uint64
	streams map[string][]*subscription
	live    map[string]bool // actor addresses of live nodes
	local   string          // this node's actor address
}

// subscription is one operator's subscription to one stream.
type subscription struct {
	stream    string
	operator  string
	epoch     int64
	routing   core.Routing
	keyGroups int
	pids      []*actor.PID // by instance index; nil where no node hosts the instance
}

// routes returns the subscriptions of stream (nil if none).
func (t *routeTable) routes(stream string) []*subscription {
	return t.streams[stream]
}

// sameLayout reports whether a and b deliver to the same instances.
func sameLayout(a, b *subscription) bool {
	if a.epoch != b.epoch || a.keyGroups != b.keyGroups || len(a.pids) != len(b.pids) {
		return false
	}
	for i := range a.pids {
		if !samePID(a.pids[i], b.pids[i]) {
			return false
		}
	}
	return true
}

func samePID(a, b *actor.PID) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Address == b.Address && a.Id == b.Id
}
