package ckpt

import (
	"fmt"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicehq/sluice/actors/wire"
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
	req      Request
	to       string
	deadline time.Time
}

// answer sends a savepoint request its answer.
func (c *Checkpointer) answer(m Request, r Reply) {
	if m.Reply != nil {
		m.Reply <- r
	}
	if m.remote != nil {
		msg := &wire.CheckpointReply{Id: r.ID, Seq: m.seq}
		if r.Err != nil {
			msg.Error = r.Err.Error()
		}
		c.root.Send(m.remote, msg)
	}
}

// forward sends a savepoint request of this node to the coordinator.
func (c *Checkpointer) forward(m Request) {
	leader := leaderOf(c.view.Members)
	i := slices.IndexFunc(c.view.Members, func(mem cluster.Member) bool { return mem.ID == leader })
	if i < 0 {
		c.answer(m, Reply{Err: fmt.Errorf("node %s does not coordinate checkpoints and knows no member that does", c.id)})
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
	c.root.RequestWithCustomSender(actor.NewPID(c.view.Members[i].Address, checkpointerName),
		&wire.CheckpointRequest{Node: c.id, Seq: f.seq}, c.self)
}

// onForwardedReply relays the coordinator's answer to a forwarded request.
func (c *Checkpointer) onForwardedReply(m *wire.CheckpointReply) {
	w, ok := c.fwd.waiting[m.Seq]
	if !ok {
		return
	}
	delete(c.fwd.waiting, m.Seq)
	r := Reply{ID: m.Id}
	if m.Error != "" {
		r.Err = fmt.Errorf("coordinator %s: %s", w.to, m.Error)
	}
	c.answer(w.req, r)
}

// expireForwarded fails forwarded requests the coordinator did not answer
// in time (it crashed, say).
func (c *Checkpointer) expireForwarded() {
	now := time.Now()
	for seq, w := range c.fwd.waiting {
		if now.After(w.deadline) {
			delete(c.fwd.waiting, seq)
			c.answer(w.req, Reply{Err: fmt.Errorf("coordinator %s did not answer the savepoint request in time", w.to)})
		}
	}
}
