// Package topology holds the deployed operators of a Sluice cluster — what
// runs, with which settings — and stores it durably, so that every node
// converges on the same set and a restarted node picks it up.
//
// A [Topology] is versioned; every change is a check-and-set on the version
// ([Store.Swap]), so two concurrent changes cannot both win: the loser gets
// [ErrConflict]. Backends:
//
//   - [NewPebbleStore]: the node's own Pebble database, for the embedded
//     single-node mode;
//   - [NewConsulStore]: a Consul KV key per cluster, written with
//     check-and-set on its ModifyIndex and watched with blocking queries.
//
// The package also holds the pure operations on a topology used by the
// control API: [Topology.Deploy], [Topology.Scale], [Topology.Kill] and
// [Topology.Seed].
package topology
