package actors

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/topology"
)

// journalSize is how many cluster events a node keeps (Node.Events).
const journalSize = 200

// journal keeps a node's latest cluster events, for the status and the
// console's timeline: a node that was killed vanishes from the
// membership, and its peers' journals say what became of it.
type journal struct {
	mu     sync.Mutex
	events []Event // oldest first, at most journalSize
}

// add keeps e. A member lost replaces the member-left of the same peer
// just before it: one entry says what happened.
func (j *journal) add(e Event) {
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

// Events returns the node's latest cluster events (at most 200), oldest
// first: members joined, left and lost, rollbacks (on the checkpoint
// coordinator), restores from checkpoints, and the deploys, scales and
// kills of the topology it follows.
func (n *Node) Events() []Event {
	n.journal.mu.Lock()
	defer n.journal.mu.Unlock()
	return slices.Clone(n.journal.events)
}

// record keeps a cluster event and reports it to Config.OnEvent.
func (n *Node) record(e Event) {
	e.Time, e.Node = time.Now(), n.cfg.NodeID
	n.journal.add(e)
	if n.cfg.OnEvent != nil {
		n.cfg.OnEvent(e)
	}
}

// memberEvent reports a membership change.
func (n *Node) memberEvent(what EventKind, peer string) {
	n.log.Info("cluster membership changed", "event", what, "peer", peer)
	n.record(Event{What: what, Peer: peer})
}

// event reports an instance lifecycle event to Config.OnEvent (not kept:
// there are too many).
func (n *Node) event(k instKey, what EventKind) {
	if n.cfg.OnEvent != nil {
		n.cfg.OnEvent(Event{Time: time.Now(), Node: n.cfg.NodeID, Operator: k.op, Epoch: k.epoch, Index: k.index, What: what})
	}
}

// topologyEvents records what changed from old to cur: operators deployed
// (or changed), scaled and killed. The first topology a node adopts is
// not reported (it changed nothing the node had seen).
func (n *Node) topologyEvents(old, cur topology.Topology) {
	if old.Version == 0 {
		return
	}
	v := fmt.Sprintf("topology version %d", cur.Version)
	for _, spec := range cur.Operators {
		name := spec.Meta.Name
		prev, ok := old.Find(name)
		switch {
		case !ok:
			n.record(Event{What: EventDeployed, Operator: name, Epoch: spec.Epoch,
				Detail: fmt.Sprintf("%s: kind %s, %d instances", v, spec.Kind, spec.Meta.Parallelism)})
		case prev.Meta.Parallelism != spec.Meta.Parallelism:
			n.record(Event{What: EventScaled, Operator: name, Epoch: spec.Epoch,
				Detail: fmt.Sprintf("%s: %d → %d instances", v, prev.Meta.Parallelism, spec.Meta.Parallelism)})
		case prev.Kind != spec.Kind:
			n.record(Event{What: EventDeployed, Operator: name, Epoch: spec.Epoch,
				Detail: fmt.Sprintf("%s: redeployed as kind %s (was %s), %d instances", v, spec.Kind, prev.Kind, spec.Meta.Parallelism)})
		case prev.Epoch != spec.Epoch: // killed and deployed again in between
			n.record(Event{What: EventDeployed, Operator: name, Epoch: spec.Epoch,
				Detail: fmt.Sprintf("%s: redeployed as epoch %d, %d instances", v, spec.Epoch, spec.Meta.Parallelism)})
		case prev.Revision != spec.Revision:
			n.record(Event{What: EventDeployed, Operator: name, Epoch: spec.Epoch, Detail: v + ": settings changed"})
		}
	}
	for _, spec := range old.Operators {
		if _, ok := cur.Find(spec.Meta.Name); !ok {
			detail := v
			if slices.Contains(cur.Purged, spec.Meta.Name) {
				detail += ", state purged"
			}
			n.record(Event{What: EventKilled, Operator: spec.Meta.Name, Epoch: spec.Epoch, Detail: detail})
		}
	}
}

// restoredEvent records that instances (by operator, their count) were
// restored from checkpoint id, why, and how long it took (0: unknown).
func (n *Node) restoredEvent(id uint64, byOp map[string]int, why string, took time.Duration) {
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
	n.record(Event{What: EventRestored, Checkpoint: id, Detail: detail})
}

// RecordAutoscaled keeps the autoscaler's decision about operator (of
// epoch) in the journal: detail is the decision with its reason and
// inputs. The control server's autoscaler calls it on the member that
// applies decisions.
func (n *Node) RecordAutoscaled(operator string, epoch int64, detail string) {
	n.record(Event{What: EventAutoscaled, Operator: operator, Epoch: epoch, Detail: detail})
}
