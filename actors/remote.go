package actors

// The node's side of package actors/transport: starting protoactor remote,
// what a message that names its sender must have come over, and the
// endpoint replies are addressed to.

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicehq/sluice/actors/flow"
	"github.com/sluicehq/sluice/actors/handoff"
	"github.com/sluicehq/sluice/actors/transport"
)

// vouched reports whether the message being handled, which claims to come
// from node claimed, came from this node or over claimed's certificate. It
// logs a message that did not, which the caller drops. Without transport
// TLS every claim is taken.
func (n *Node) vouched(ctx actor.Context, what, claimed string) bool {
	if n.transport == nil {
		return true
	}
	p := transport.PeerOf(ctx)
	if p == "" || transport.SpeaksFor(p, claimed) {
		return true
	}
	n.log.Warn("dropped a message claiming to come from another node than the certificate it came over",
		"message", what, "claims", claimed, "certificate", p)
	return false
}

// messageLimit is the largest gRPC message a node takes from a peer: a
// bundle of transport.EndpointBatchSize messages, each at most a batch of BatchBytes
// or a record of MaxRecordBytes, or a handoff chunk, with room for their
// framing (a few bytes a record, and the batch's fields). gRPC's default
// of 4 MB refused a bundle of large records, and with it every batch after
// (the stream broke and the batches stayed in flight).
func (n *Node) messageLimit() int {
	msg := max(n.cfg.BatchBytes, n.cfg.MaxRecordBytes, handoff.ChunkBytes) + 64*max(n.cfg.BatchSize, n.cfg.RemoteBatchSize) + 64<<10
	return transport.EndpointBatchSize * msg
}

// startRemote starts protoactor remote on the configured address, with
// mutual TLS when configured (package actors/transport).
func (n *Node) startRemote() error {
	cc := n.cfg.Cluster
	var err error
	n.remote, n.transport, err = transport.Start(n.system, transport.Config{NodeID: n.cfg.NodeID, BindAddr: cc.BindAddr, AdvertiseAddr: cc.AdvertiseAddr,
		Security: cc.Security, MessageLimit: n.messageLimit(), Log: n.log})
	return err
}

// replyTo returns the endpoint at which the producer of actor pid
// receives its acks and bounces: addressed to this process.
func (n *Node) replyTo(pid *actor.PID) flow.Endpoint {
	return flow.Endpoint{Addr: pid.Address, ID: transport.Addressed(pid.Id, n.incarnation)}
}
