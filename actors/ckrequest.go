package actors

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicehq/sluice/actors/wire"
	"github.com/sluicehq/sluice/checkpoint"
	"github.com/sluicehq/sluice/cluster"
)

// Savepoints on any node, and reading the checkpoints kept.
//
// A savepoint is asked of the coordinator (the member with the lowest id);
// a node that does not coordinate forwards the request to the one it sees
// coordinating, over the node-to-node connection, and relays its answer.
// The coordinator does not forward again: while the members' views
// differ the request fails, saying which node coordinates.

// forwarding is a node's savepoint requests waiting for the coordinator's
// answer, by sequence number.
type forwarding struct {
	seq     uint64
	waiting map[uint64]forwardedRequest
}

// forwardedRequest is one request forwarded to the coordinator.
type forwardedRequest struct {
	req      ckRequestMsg
	to       string
	deadline time.Time
}

// answer sends a savepoint request its answer.
func (c *checkpointer) answer(m ckRequestMsg, r ckReply) {
	if m.reply != nil {
		m.reply <- r
	}
	if m.remote != nil {
		msg := &wire.CheckpointReply{Id: r.id, Seq: m.seq}
		if r.err != nil {
			msg.Error = r.err.Error()
		}
		c.n.system.Root.Send(m.remote, msg)
	}
}

// forward sends a savepoint request of this node to the coordinator.
func (c *checkpointer) forward(m ckRequestMsg) {
	leader := leaderOf(c.view.members)
	i := slices.IndexFunc(c.view.members, func(mem cluster.Member) bool { return mem.ID == leader })
	if i < 0 {
		c.answer(m, ckReply{err: fmt.Errorf("node %s does not coordinate checkpoints and knows no member that does", c.n.cfg.NodeID)})
		return
	}
	f := &c.fwd
	if f.waiting == nil {
		f.waiting = make(map[uint64]forwardedRequest)
	}
	f.seq++
	// A savepoint may wait for the checkpoint in progress, then take its
	// own: up to two timeouts, and some slack for the messages.
	f.waiting[f.seq] = forwardedRequest{req: m, to: leader, deadline: time.Now().Add(2*c.cfg.Timeout + 10*time.Second)}
	c.n.system.Root.RequestWithCustomSender(actor.NewPID(c.view.members[i].Address, checkpointerName),
		&wire.CheckpointRequest{Node: c.n.cfg.NodeID, Seq: f.seq}, c.self)
}

// onForwardedReply relays the coordinator's answer to a forwarded request.
func (c *checkpointer) onForwardedReply(m *wire.CheckpointReply) {
	w, ok := c.fwd.waiting[m.Seq]
	if !ok {
		return
	}
	delete(c.fwd.waiting, m.Seq)
	r := ckReply{id: m.Id}
	if m.Error != "" {
		r.err = fmt.Errorf("coordinator %s: %s", w.to, m.Error)
	}
	c.answer(w.req, r)
}

// expireForwarded fails forwarded requests the coordinator did not answer
// in time (it crashed, say).
func (c *checkpointer) expireForwarded() {
	now := time.Now()
	for seq, w := range c.fwd.waiting {
		if now.After(w.deadline) {
			delete(c.fwd.waiting, seq)
			c.answer(w.req, ckReply{err: fmt.Errorf("coordinator %s did not answer the savepoint request in time", w.to)})
		}
	}
}

// ErrNoCheckpoints is returned by the checkpoint methods of a node that
// takes no checkpoints (its guarantee is not exactly-once).
var ErrNoCheckpoints = errors.New("actors: checkpoints are off (the guarantee is not exactly-once)")

// Checkpoints returns the complete checkpoints kept in the store, newest
// first. Every node reads the shared store directly, so any node answers
// the same.
func (n *Node) Checkpoints(ctx context.Context) ([]checkpoint.Meta, error) {
	if n.cfg.Checkpoints == nil {
		return nil, ErrNoCheckpoints
	}
	list, err := n.cfg.Checkpoints.Store.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("actors: list checkpoints: %w", err)
	}
	slices.Reverse(list)
	return list, nil
}

// CheckpointMeta returns the metadata of complete checkpoint id, read from
// the store (checkpoint.ErrNotFound when there is none).
func (n *Node) CheckpointMeta(ctx context.Context, id uint64) (checkpoint.Meta, error) {
	if n.cfg.Checkpoints == nil {
		return checkpoint.Meta{}, ErrNoCheckpoints
	}
	m, err := n.cfg.Checkpoints.Store.Get(ctx, id)
	if err != nil {
		return checkpoint.Meta{}, fmt.Errorf("actors: %w", err)
	}
	return m, nil
}

// storeFailure says why the checkpoint store failed: "store unreachable: "
// and the error when it is a network failure or a timeout (what an outage
// of S3 looks like), else the error.
func storeFailure(err error) string {
	var op *net.OpError
	if errors.As(err, &op) || errors.Is(err, context.DeadlineExceeded) {
		return "store unreachable: " + err.Error()
	}
	return err.Error()
}
