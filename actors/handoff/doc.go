// Package handoff is placement on a node and the handoff of state between
// nodes: the Coordinator actor decides, from the membership and the
// topology (package placement's pure function), which operator instances
// run on this node, spawns and releases them, publishes the route table,
// and moves the key groups' state of an instance that moves to the node
// where it runs now (HandoffRequest, HandoffReply, HandoffChunk, package
// actors/wire), so that an instance is never active on two nodes at once.
//
// The package does not know the node: it reaches it through the Node
// interface (spawning and telling instances, publishing the route table,
// events), which package actors implements, and the values of Params.
//
// # Files
//
//	coordinator.go  the Coordinator actor: Receive, membership, placement, publication
//	handoff.go      acquisitions, serving requests, exports and chunks, rollbacks
//	messages.go     the messages from the node and its instances; State
//	node.go         Params, Instance, and the Node interface
//
// A record never passes through this package.
package handoff
