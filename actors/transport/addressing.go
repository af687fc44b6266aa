package transport

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
	"log/slog"
	"strings"
	"sync/atomic"
	"time"
)

// incarnationSep separates an actor id from the incarnation it is
// addressed to. Neither actor ids nor incarnations contain it.
const incarnationSep = "#"

// Addressed returns actor id id addressed to the node process of
// incarnation inc, or id itself when inc is unknown.
func Addressed(id, inc string) string {
	if inc == "" {
		return id
	}
	return id + incarnationSep + inc
}

// Ours returns the actor id that target names, and whether target is
// addressed to the node process of incarnation inc (or to none).
func Ours(target, inc string) (id string, ok bool) {
	id, to, found := strings.Cut(target, incarnationSep)
	return id, !found || to == inc
}

// refusedLogEvery bounds how often a node logs the messages it refused
// for being addressed to another process.
const refusedLogEvery = 10 * time.Second

// Misaddressed counts the messages a node refused for being addressed to
// another process at its address, and when it last logged one. The zero
// value is ready; it is safe for concurrent use.
type Misaddressed struct {
	count  atomic.Int64
	logged atomic.Int64 // unix nanoseconds
}

// Refused counts a message addressed to another process (target) and logs
// it to log at most every refusedLogEvery.
func (m *Misaddressed) Refused(log *slog.Logger, target, from string) {
	total := m.count.Add(1)
	now := time.Now().UnixNano()
	last := m.logged.Load()
	if now-last < int64(refusedLogEvery) || !m.logged.CompareAndSwap(last, now) {
		return
	}
	log.Warn("refused a message addressed to another process that had this node's address (a peer has not yet seen it go)",
		"target", target, "from", from, "refused so far", total)
}

// Count returns how many messages were refused.
func (m *Misaddressed) Count() int64 { return m.count.Load() }
