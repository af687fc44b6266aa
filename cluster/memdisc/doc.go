// Package memdisc is an in-process cluster.Discovery backend.
//
// A [Registry] is the shared membership table; each [Discovery] made by
// [New] on it is one "node". It serves the embedded single-node mode (one
// process, no Consul) and unit tests that run several nodes in one
// process:
//
//	reg := memdisc.NewRegistry()
//	a, b := memdisc.New(reg), memdisc.New(reg)
//	_ = a.Join(ctx, cluster.Member{ID: "a", Address: "127.0.0.1:9001"})
//	_ = b.Join(ctx, cluster.Member{ID: "b", Address: "127.0.0.1:9002"})
//	snap := <-a.Watch(ctx) // [a b]
//	reg.Fail("b")          // b crashes: removed at once, no Leave
//
// Changes are immediate: a member is in the snapshot from the moment Join
// returns until Leave, the end of the Join context, or [Registry.Fail].
// There is no heartbeat, so detection of a failure injected with Fail
// takes no time.
package memdisc
