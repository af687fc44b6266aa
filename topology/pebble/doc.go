// Package pebble is the topology.Store backend in a node's own Pebble
// database, for the embedded (single-node) mode.
//
// The topology is one JSON value under the node-metadata key [MetaKey];
// writes are serialised by the store, checked against the version and
// published to the store's watchers:
//
//	db, err := persistence.Open(dir, persistence.Options{})
//	if err != nil { ... }
//	store := pebble.New(db)
//	t, err := topology.Update(ctx, store, 1, func(t topology.Topology) (topology.Topology, error) { ... })
package pebble
