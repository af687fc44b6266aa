package actors

import (
	"github.com/sluicehq/sluice/actors/status"
	"github.com/sluicehq/sluice/cluster"
)

// The node's side of package actors/status: its health Monitor reaches
// the node through healthNode; the node fills its Journal and its
// DeadLetters and collects its instances' status.

// resumeMsg tells an instance that the node takes work again.
type resumeMsg struct{}

// healthNode is the node as its health monitor sees it (status.Node).
type healthNode struct{ n *Node }

var _ status.Node = healthNode{}

// Report publishes the node's health to the cluster membership, if its
// discovery can (cluster.HealthReporter).
func (h healthNode) Report(reason string) {
	if h.n.cfg.Cluster == nil {
		return
	}
	if hr, ok := h.n.cfg.Cluster.Discovery.(cluster.HealthReporter); ok {
		hr.SetHealth(reason)
	}
}

// Resume tells every instance that the node takes work again.
func (h healthNode) Resume() {
	for _, inst := range h.n.instances() {
		h.n.system.Root.Send(inst.pid, resumeMsg{})
	}
}

// Health returns the node's health as of its last check (every
// Config.DiskCheckInterval). Safe for concurrent use.
func (n *Node) Health() status.Health { return n.health.Health() }

// Failed is closed when the node cannot go on (Health().Fatal): its state
// database failed, or it was fenced; Health().Reason says why. The owner of
// the node should exit the process: Stop cannot complete cleanly then.
func (n *Node) Failed() <-chan struct{} { return n.health.Failed() }

// paused reports whether instances hold their input (the node is
// unhealthy).
func (n *Node) paused() bool { return n.health.Paused() }

// fence fails the node for good (status.HealthFenced; see
// status.Monitor.Fence).
func (n *Node) fence(reason string) { n.health.Fence(reason) }

// Events returns the node's latest cluster events (at most 200), oldest
// first: members joined, left and lost, rollbacks (on the checkpoint
// coordinator), restores from checkpoints, the deploys, scales and kills
// of the topology it follows, and the autoscaler's decisions.
func (n *Node) Events() []status.Event { return n.journal.Events() }

// memberEvent reports a membership change.
func (n *Node) memberEvent(what status.EventKind, peer string) {
	n.log.Info("cluster membership changed", "event", what, "peer", peer)
	n.journal.Record(status.Event{What: what, Peer: peer})
}

// event reports an instance lifecycle event to Config.OnEvent (not kept:
// there are too many).
func (n *Node) event(k instKey, what status.EventKind) {
	n.journal.Instance(k.op, k.epoch, k.index, what)
}

// RecordAutoscaled keeps the autoscaler's decision about operator (of
// epoch) in the journal: detail is the decision with its reason and
// inputs. The control server's autoscaler calls it on the member that
// applies decisions.
func (n *Node) RecordAutoscaled(operator string, epoch int64, detail string) {
	n.journal.Record(status.Event{What: status.EventAutoscaled, Operator: operator, Epoch: epoch, Detail: detail})
}

// Status returns the state of every operator instance on this node, by
// operator name.
func (n *Node) Status() []status.OperatorStatus {
	insts := n.instances()
	placed := make([]status.Placed, len(insts))
	for k, inst := range insts {
		placed[k] = status.Placed{Operator: inst.key.op, Status: inst.status()}
	}
	return status.Collect(n.topology(), placed, &n.dlLog)
}

// status snapshots the instance.
func (i *instance) status() status.InstanceStatus {
	i.mu.Lock()
	defer i.mu.Unlock()
	return status.InstanceStatus{
		Index:           i.key.index,
		Epoch:           i.key.epoch,
		Node:            i.node.cfg.NodeID,
		FirstGroup:      i.lo,
		EndGroup:        i.hi,
		State:           i.state,
		Restarts:        i.restarts,
		Processed:       i.pub.processed.Load(),
		Produced:        i.pub.produced.Load(),
		DeadLetters:     i.pub.deadLetters.Load(),
		TransientErrors: i.pub.transient.Load(),
		Queued:          i.pub.queued.Load(),
		Blocked:         i.pub.blockedTime.read(),
		Busy:            i.pub.busyTime.read(),
		StateBytes:      i.stateBytes(),
		Watermark:       wmTime(i.pub.watermark.Load()),
		Finished:        i.pub.finished.Load(),
		LastError:       i.lastError,
		FailedReason:    i.failedReason,
	}
}

// stateBytes estimates the disk space of the instance's key groups (0 when
// it cannot tell).
func (i *instance) stateBytes() int64 {
	n, err := i.node.db.EstimateSize(i.key.op, i.lo, i.hi)
	if err != nil {
		return 0
	}
	return int64(n)
}
