// Package ckpt holds the node's checkpoint machinery that does not need the
// node itself. So far: the Restorer, which opens the parts of a checkpoint
// (the node's own local copy, or a part fetched from the checkpoint store)
// that instances restore their key groups from, sharing one fetch and one
// opened copy of each part between the instances of a rollback.
//
// A record never passes through this package: it runs when an instance is
// activated from a checkpoint (a rollback, a restore, a node that restarts).
// The node (package actors) owns the Restorer, calls Begin and End around
// each restore, Open for each part it restores from and CloseAll once a
// rollback has finished.
package ckpt
