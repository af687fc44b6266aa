package actors

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicehq/sluice/internal/core"
)

// routeTable maps each stream to the operators subscribed to it. It is
// immutable once published; topology changes publish a new table with a
// higher version.
type routeTable struct {
	version uint64
	streams map[string][]*subscription
}

// subscription is one operator's subscription to one stream.
type subscription struct {
	stream    string
	operator  string
	routing   core.Routing
	keyGroups int
	pids      []*actor.PID // by instance index
}

// routes returns the subscriptions of stream (nil if none).
func (t *routeTable) routes(stream string) []*subscription {
	return t.streams[stream]
}
