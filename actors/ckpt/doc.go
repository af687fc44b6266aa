// Package ckpt is the node's checkpoint machinery (exactly-once): the
// Checkpointer actor, through which a node takes part in checkpoints and
// rollbacks and which, on the member with the lowest id, coordinates them,
// and the Restorer, which opens the parts of a checkpoint that instances
// restore their key groups from.
//
// The package does not know the node: it reaches it through the Node
// interface (its instances, goroutines and timers, events), which package
// actors implements, and the values of Params. The instances' part of a
// checkpoint (aligning barriers, snapshotting, committing sinks) and of a
// rollback (reset, restore) is the instance runtime's, package actors: it
// exchanges the messages of messages.go with the checkpointer. What
// crosses nodes is package actors/wire.
//
// # Files
//
//	checkpointer.go  the Checkpointer actor: Receive, and the node's part of a checkpoint
//	coordinator.go   the coordinator's role: trigger, collect parts, complete or abort
//	rollback.go      rollbacks after a crash, the coordinator's and the node's part
//	requests.go      savepoints asked on any node, forwarded to the coordinator
//	messages.go      the messages with instances and the node; Key, View
//	node.go          Config, Params, and the Node interface
//	restorer.go      the Restorer
//
// A record never passes through this package.
package ckpt
