package handoff

import (
	"github.com/sluicehq/sluice/actors/ckpt"
	"github.com/sluicehq/sluice/checkpoint"
	"github.com/sluicehq/sluice/cluster"
	"github.com/sluicehq/sluice/topology"
)

// The messages the node and its instances send the coordinator. What
// crosses nodes (handoff requests, replies and chunks, Leaving) is
// package actors/wire.
type (
	// Membership is the cluster's membership as the node's discovery
	// last saw it; the coordinator applies it after the settle delay.
	Membership struct{ Members []cluster.Member }
	// TopologyChanged is a new version of the topology.
	TopologyChanged struct{ Topo topology.Topology }
	// Released tells the coordinator that an instance is released (its
	// state committed, its output acknowledged).
	Released struct{ Key ckpt.Key }
	// RolledBack tells the coordinator that every instance of this node
	// was reset for the rollback to checkpoint Meta (nil: none) in
	// generation Gen.
	RolledBack struct {
		Gen  uint64
		Meta *checkpoint.Meta
	}
	// Leave makes the node leave: it hands everything off.
	Leave struct{}
	// StateRequest asks for a snapshot of what the coordinator holds.
	StateRequest struct{ Reply chan<- State }
)

// State is a snapshot of the coordinator, for Node.Leave and status.
type State struct {
	// HeldGroups counts the key groups held here that another node could
	// take over.
	HeldGroups   int
	LocalActive  int
	LocalWaiting int
	Pending      []string // instances waiting for handoffs, with who they wait for
	Members      []cluster.Member
	// Leaving are the members (this node too) that announced they are
	// leaving: nothing is placed on them.
	Leaving []string
}
