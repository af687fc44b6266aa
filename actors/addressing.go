package actors

// Addressing node processes. Batches name the instance they are for, and
// acks, bounces and durable acks the producer they answer, by actor id
// ("op/count/0.3"), sent to the dispatcher at the node's address. Once a
// node stops, another process may listen at its address: the same node
// restarted, or, where addresses are reused, a node of another cluster
// with instances of the same ids. A peer that has not yet seen the node go
// would then hand records to the wrong process: a batch would be counted
// there, a bounce's records routed there a second time. So every such id
// is addressed to one process, "<actor id>#<incarnation>" (the incarnation
// is random per start and in the member record), and a dispatcher takes
// only what is addressed to its own process: a batch for another is
// bounced (its producer routes it again, as for an instance not placed
// here), a reply for another is dropped (nothing here sent that batch).
// An id without an incarnation comes from a node that does not address
// them so, and is taken as before.

import (
	"strings"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicehq/sluice/actors/flow"
)

// incarnationSep separates an actor id from the incarnation it is
// addressed to. Neither actor ids nor incarnations contain it.
const incarnationSep = "#"

// addressed returns actor id id addressed to the node process of
// incarnation inc, or id itself when inc is unknown.
func addressed(id, inc string) string {
	if inc == "" {
		return id
	}
	return id + incarnationSep + inc
}

// ours returns the actor id that target names, and whether target is
// addressed to this node process (or to none).
func (n *Node) ours(target string) (id string, ok bool) {
	id, inc, found := strings.Cut(target, incarnationSep)
	return id, !found || inc == n.incarnation
}

// replyTo returns the endpoint at which the producer of actor pid
// receives its acks and bounces: addressed to this process.
func (n *Node) replyTo(pid *actor.PID) flow.Endpoint {
	return flow.Endpoint{Addr: pid.Address, ID: addressed(pid.Id, n.incarnation)}
}

// refusedLogEvery bounds how often a node logs the messages it refused
// for being addressed to another process.
const refusedLogEvery = 10 * time.Second

// misaddressed counts the messages a node refused for being addressed to
// another process at its address, and when it last logged one.
type misaddressed struct {
	count  atomic.Int64
	logged atomic.Int64 // unix nanoseconds
}

// refused counts a message addressed to another process (target) and logs
// it at most every refusedLogEvery.
func (n *Node) refused(target, from string) {
	total := n.misaddressed.count.Add(1)
	now := time.Now().UnixNano()
	last := n.misaddressed.logged.Load()
	if now-last < int64(refusedLogEvery) || !n.misaddressed.logged.CompareAndSwap(last, now) {
		return
	}
	n.log.Warn("refused a message addressed to another process that had this node's address (a peer has not yet seen it go)",
		"target", target, "from", from, "refused so far", total)
}
