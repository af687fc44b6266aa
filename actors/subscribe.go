package actors

// The node's side of package actors/tail: reading a stream from outside.

import (
	"context"

	"github.com/sluicehq/sluice/actors/tail"
	"github.com/sluicehq/sluice/topology"
)

// tailNode is the node as its subscriptions see it (tail.Node).
type tailNode struct{ n *Node }

var _ tail.Node = tailNode{}

func (t tailNode) ChangeTopology(ctx context.Context, change func(topology.Topology) (topology.Topology, error)) error {
	return t.n.changeTopology(ctx, change)
}

func (t tailNode) Routed(stream, operator string) bool {
	for _, sub := range t.n.table.Load().Routes(stream) {
		if sub.Operator == operator && len(sub.Dests) == 1 && sub.Dests[0] != nil {
			return true
		}
	}
	return false
}

func (t tailNode) Topology() topology.Topology { return t.n.topology() }
func (t tailNode) Stopping() bool              { return t.n.isStopping() }
func (t tailNode) Life() context.Context       { return t.n.life }

// Subscribe starts reading stream from outside the operators: it deploys a
// reader operator and returns once this node routes the stream's records
// to it (or fails when ctx is done first). The subscription is closed when
// ctx is done or by Close; Stop closes those left open.
func (n *Node) Subscribe(ctx context.Context, stream string) (*tail.Subscription, error) {
	return n.tails.Subscribe(ctx, stream)
}

// forgetTail stops the supervisor of a closed subscription's reader once
// its last instance was removed (the coordinator's tick), so that closed
// subscriptions leave nothing behind.
func (n *Node) forgetTail(op *operator) {
	if len(op.list()) > 0 || !n.tails.Forget(op.name) {
		return
	}
	n.mu.Lock()
	if n.ops[op.name] == op {
		delete(n.ops, op.name)
	}
	n.mu.Unlock()
	if err := op.stop(); err != nil {
		n.log.Warn("stopping a closed subscription's reader failed", "operator", op.name, "error", err)
	}
}

// changeTopology applies change to the stored topology with check-and-set,
// retrying on a concurrent change.
func (n *Node) changeTopology(ctx context.Context, change func(topology.Topology) (topology.Topology, error)) error {
	_, err := topology.Update(ctx, n.store, 20, change)
	return err
}
