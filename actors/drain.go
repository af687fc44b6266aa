package actors

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/sluicehq/sluice/actors/status"
	"github.com/sluicehq/sluice/cluster"
)

// Drain empties the node while it keeps running: its subscriptions are
// closed and it leaves as Stop does (the other members take over its
// instances, live, with their state), then it stays a member that nothing
// is placed on until it stops. It returns once the node runs no instance
// and holds no state another member could take, and no record is in
// flight through it; if ctx ends first the drain goes on in the
// background and a later Drain waits for it again. It refuses a node
// outside a cluster, one that is stopping, and one with an instance of a
// kind no other member hosts (that operator would stop running).
func (n *Node) Drain(ctx context.Context) error {
	if n.cfg.Cluster == nil {
		return errors.New("actors: drain: the node is not in a cluster: no other node could take its instances")
	}
	if n.isStopping() {
		return errors.New("actors: drain: the node is stopping")
	}
	st, err := n.coordState(ctx)
	if err != nil {
		return fmt.Errorf("actors: drain: %w", err)
	}
	topo := n.topology()
	for _, op := range n.Status() {
		if !slices.ContainsFunc(op.Instances, func(in status.InstanceStatus) bool {
			return in.State != status.StateReleased && in.State != status.StateStopped
		}) {
			continue
		}
		spec, ok := topo.Find(op.Name)
		if !ok {
			continue
		}
		hosted := slices.ContainsFunc(st.Members, func(m cluster.Member) bool {
			return m.ID != n.ID() && !slices.Contains(st.Leaving, m.ID) && slices.Contains(m.Kinds, spec.Kind)
		})
		if !hosted {
			return fmt.Errorf("actors: drain: operator %q (kind %q) runs here and no other member hosts its kind (or they are leaving)", op.Name, spec.Kind)
		}
	}
	if err := n.tails.CloseAll(ctx); err != nil {
		return fmt.Errorf("actors: drain: %w", err)
	}
	if err := n.leave(ctx); err != nil {
		return fmt.Errorf("actors: drain: %w", err)
	}
	n.log.Info("node drained: its instances run on the other members")
	return nil
}
