// Package consul is the topology.Store backend on Consul KV, for clusters.
//
// The topology of cluster C is one JSON value at the key
// "sluice/C/topology" ([Key]). [Store.Swap] reads it with a consistent
// query and writes it with check-and-set on the key's ModifyIndex, so of
// two concurrent changes based on the same version one gets
// topology.ErrConflict. [Store.Watch] holds a blocking query on the key and
// sends every new version, latest-wins.
//
// Consul is the only copy: an agent that loses its data (a dev agent
// restarted, a server cluster rebuilt) comes back with no topology.
// Nodes wrap the store in topology.Guard, which keeps the last topology in
// the node's data dir and writes it back ([Store.Restore]):
//
//	s, err := consul.New("127.0.0.1:8500", "sluice", log)
//	if err != nil { ... }
//	g, err := topology.NewGuard(s, topology.NewFileCopy(filepath.Join(dataDir, topology.CopyFile), consul.Key("sluice")), log)
package consul
