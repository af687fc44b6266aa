package status

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/topology"
)

// Event is something that happened on a node: an instance's lifecycle
// (reported only), or a cluster event, which the Journal also keeps
// (membership, rollbacks and restores, deploys, scales and kills).
type Event struct {
	Time     time.Time
	Node     string
	Operator string
	Epoch    int64
	Index    int
	// What happened.
	What EventKind
	// Peer is the member that joined, left or was lost.
	Peer string
	// Checkpoint is the checkpoint rolled back to or restored from.
	Checkpoint uint64
	// Detail says more, for people: a rollback's reason, what a restore
	// or a scale changed.
	Detail string
}

// EventKind says what an Event reports.
type EventKind string

// The kinds of events.
const (
	// EventActive: an instance started processing on the node.
	EventActive EventKind = "active"
	// EventReleased: an instance stopped processing on the node because it
	// was placed elsewhere.
	EventReleased EventKind = "released"
	// EventStopped: an instance stopped because the node stopped.
	EventStopped EventKind = "stopped"
	// EventMemberJoined: the node's view of the cluster gained Peer.
	EventMemberJoined EventKind = "member-joined"
	// EventMemberLeft: the node's view of the cluster lost Peer.
	EventMemberLeft EventKind = "member-left"
	// EventNodeLost follows EventMemberLeft when Peer left without
	// announcing it: it crashed, was killed or cannot be reached, and
	// what it held in flight is lost (and, exactly-once, rolled back).
	EventNodeLost EventKind = "node-lost"
	// EventRollback: this node, coordinating checkpoints, rolls every
	// node back to the newest complete checkpoint (Detail: why).
	EventRollback EventKind = "rollback"
	// EventRestored: instances of this node were restored from
	// Checkpoint, by a rollback or when they started here after a crash
	// (Detail: which).
	EventRestored EventKind = "restored"
	// EventDeployed, EventScaled and EventKilled: the topology this node
	// follows deployed (or changed), scaled or killed Operator (Detail:
	// the topology version and what changed).
	EventDeployed EventKind = "deployed"
	EventScaled   EventKind = "scaled"
	EventKilled   EventKind = "killed"
	// EventAutoscaled: the autoscaler (on the member with the lowest id)
	// scaled Operator, or in dry-run recommended it (Detail: the
	// decision, its reason and inputs; actors.Node.RecordAutoscaled).
	EventAutoscaled EventKind = "autoscaled"
)

// String returns the kind's name.
func (k EventKind) String() string { return string(k) }

// journalSize is how many cluster events a node keeps (Journal.Events).
const journalSize = 200

// Journal keeps a node's latest cluster events, for the status and the
// console's timeline: a node that was killed vanishes from the
// membership, and its peers' journals say what became of it. It also
// hands every event it is told to its OnEvent function. Safe for
// concurrent use.
type Journal struct {
	node    string
	onEvent func(Event)

	mu     sync.Mutex // a leaf
	events []Event    // oldest first, at most journalSize
}

// NewJournal returns the journal of node, which calls onEvent (when not
// nil) synchronously with every event, kept or not.
func NewJournal(node string, onEvent func(Event)) *Journal {
	return &Journal{node: node, onEvent: onEvent}
}

// Record keeps the cluster event e, stamped with the time and the node,
// and hands it to OnEvent. A member lost replaces the member-left of the
// same peer just before it: one entry says what happened.
func (j *Journal) Record(e Event) {
	e.Time, e.Node = time.Now(), j.node
	j.add(e)
	if j.onEvent != nil {
		j.onEvent(e)
	}
}

// add keeps e (see Record).
func (j *Journal) add(e Event) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if last := len(j.events) - 1; e.What == EventNodeLost && last >= 0 && j.events[last].What == EventMemberLeft && j.events[last].Peer == e.Peer {
		j.events[last] = e
		return
	}
	if len(j.events) == journalSize {
		j.events = slices.Delete(j.events, 0, 1)
	}
	j.events = append(j.events, e)
}

// Instance hands an instance's lifecycle event (what of the instance
// index of operator op, of epoch) to OnEvent; it is not kept: there are
// too many.
func (j *Journal) Instance(op string, epoch int64, index int, what EventKind) {
	if j.onEvent != nil {
		j.onEvent(Event{Time: time.Now(), Node: j.node, Operator: op, Epoch: epoch, Index: index, What: what})
	}
}

// Events returns the latest cluster events (at most 200), oldest first.
func (j *Journal) Events() []Event {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.events)
}

// Topology records what changed from old to cur: operators deployed
// (or changed), scaled and killed. The first topology a node adopts is
// not reported (it changed nothing the node had seen).
func (j *Journal) Topology(old, cur topology.Topology) {
	if old.Version == 0 {
		return
	}
	v := fmt.Sprintf("topology version %d", cur.Version)
	for _, spec := range cur.Operators {
		name := spec.Meta.Name
		prev, ok := old.Find(name)
		switch {
		case !ok:
			j.Record(Event{What: EventDeployed, Operator: name, Epoch: spec.Epoch,
				Detail: fmt.Sprintf("%s: kind %s, %d instances", v, spec.Kind, spec.Meta.Parallelism)})
		case prev.Meta.Parallelism != spec.Meta.Parallelism:
			j.Record(Event{What: EventScaled, Operator: name, Epoch: spec.Epoch,
				Detail: fmt.Sprintf("%s: %d → %d instances", v, prev.Meta.Parallelism, spec.Meta.Parallelism)})
		case prev.Kind != spec.Kind:
			j.Record(Event{What: EventDeployed, Operator: name, Epoch: spec.Epoch,
				Detail: fmt.Sprintf("%s: redeployed as kind %s (was %s), %d instances", v, spec.Kind, prev.Kind, spec.Meta.Parallelism)})
		case prev.Epoch != spec.Epoch: // killed and deployed again in between
			j.Record(Event{What: EventDeployed, Operator: name, Epoch: spec.Epoch,
				Detail: fmt.Sprintf("%s: redeployed as epoch %d, %d instances", v, spec.Epoch, spec.Meta.Parallelism)})
		case prev.Revision != spec.Revision:
			j.Record(Event{What: EventDeployed, Operator: name, Epoch: spec.Epoch, Detail: v + ": settings changed"})
		}
	}
	for _, spec := range old.Operators {
		if _, ok := cur.Find(spec.Meta.Name); !ok {
			detail := v
			if slices.Contains(cur.Purged, spec.Meta.Name) {
				detail += ", state purged"
			}
			j.Record(Event{What: EventKilled, Operator: spec.Meta.Name, Epoch: spec.Epoch, Detail: detail})
		}
	}
}

// Restored records that instances (by operator, their count) were
// restored from checkpoint id, why, and how long it took (0: unknown).
func (j *Journal) Restored(id uint64, byOp map[string]int, why string, took time.Duration) {
	if len(byOp) == 0 {
		return
	}
	var parts []string
	total := 0
	for _, op := range slices.Sorted(maps.Keys(byOp)) {
		parts = append(parts, fmt.Sprintf("%s ×%d", op, byOp[op]))
		total += byOp[op]
	}
	detail := fmt.Sprintf("%d instances (%s) %s", total, strings.Join(parts, ", "), why)
	if took > 0 {
		detail += fmt.Sprintf(" in %s", took.Round(time.Millisecond))
	}
	j.Record(Event{What: EventRestored, Checkpoint: id, Detail: detail})
}
