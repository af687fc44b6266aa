// Package mesos is the Mesos framework scheduler that runs Sluice nodes on
// a Mesos cluster: it takes resource offers, launches node tasks for the
// desired pools, relaunches them when they fail, and survives its own
// failover. cmd/sluice-mesos is its command; docs/mesos.md is the user
// guide.
//
// It is written on mesos-go v0.0.11's v1 HTTP API (httpcli/httpsched for
// the client, extras/scheduler/controller for the subscription,
// scheduler/calls and scheduler/events), protobuf encoded by default.
//
// # Pools, slots and tasks
//
// A Pool (SetPools) is a number of identical node tasks with their cpus,
// mem, disk, command, URIs, environment and, optionally, a persistent
// volume for their data. Instance i of pool p is a slot, the node's
// identity; a slot has at most one task it keeps, whose Mesos task ID
// "<pool>.<i>.<random>" is also the node's ID. A node joins the cluster
// through Consul (SLUICE_CONSUL, SLUICE_CLUSTER in its environment) and
// binds two ports of its offer on the agent's hostname (SLUICE_BIND,
// SLUICE_ADVERTISE, SLUICE_HTTP).
//
// # How a task comes to run
//
//	SetPools ──► slot pending (no node of it active in Consul) ──► REVIVE ──► OFFERS
//	        ──► fit: cpus, mem, disk, 2 ports (its volume, or disk for one) in one offer,
//	            fewest tasks of the pool on the agent
//	        persist the task ID (Consul KV) ──► ACCEPT [RESERVE, CREATE,] LAUNCH; other offers DECLINEd
//	        UPDATE STARTING, RUNNING (acknowledged) ──► nothing pending ──► SUPPRESS
//	        UPDATE UNREACHABLE ──► wait; RUNNING again when the agent is back
//	        UPDATE FAILED/LOST/GONE ──► backoff ──► slot pending again … more than retries ──► pool failed
//	        UPDATE KILLED after a scale-down or kill ──► slot gone, nothing relaunched
//
// After every (re)subscription the scheduler reconciles: it asks about
// each task it knows (again, with backoff, until the master answers), and
// about all of the framework's tasks; a slot whose task has not been
// confirmed is not relaunched, so no task is launched twice. Unknown live
// tasks are adopted into a free slot or killed.
//
// # Structure
//
// The decisions are a state machine without I/O (machine.go, with
// offers.go, ports.go, volumes.go, tasks.go, partition.go, members.go,
// reconcile.go, persist.go, status.go), driven by one goroutine per
// leadership term (leader.go) that feeds it events (subscribe.go, which
// finds the leading master with probe.go), the cluster's members in Consul
// (members.go), the clock and the desired pools, and carries out its
// output (apply.go): persist, then calls to the master, within the lease
// Consul confirms (lease.go). ha.go elects the leader with a Consul lock
// and fences its writes; the status (package mesosstatus, a leaf without
// mesos-go) is published to Consul (publish.go) for
// mesosstatus.ReadStatus. nodescale.go sizes the autoscaled pool (one
// goroutine per term): it reads the cluster's node recommendation from a
// node, decides with autoscale.NodePolicy, and grows the pool's size, or
// drains the node of its highest instance (POST /v1/node/drain) before
// shrinking it by one. Every backoff is internal/backoff's: jittered
// (±50 %) for the scheduler's own retries (campaigning, subscribing,
// reading the members), so that schedulers and masters are not hit in
// lock step; the n-th delay of an unjittered one (backoff.Nth) for the
// machine's decisions (relaunch, asking the master again about a task),
// which are deterministic and persist a count, not a backoff object.
//
// # Example
//
//	cfg := mesos.DefaultConfig()
//	cfg.Master = "http://mesos-master:5050"
//	cfg.Consul = "127.0.0.1:8500"
//	cfg.Cluster = "prod"
//	cfg.NodeBinary = "https://downloads.example.com/sluice-node"
//	s, err := mesos.New(cfg)
//	if err != nil { ... }
//	_ = s.SetPools([]mesos.Pool{{Name: "main", Instances: 3, CPUs: 2, Mem: 4096, Disk: 10240, Retries: 3}})
//	err = s.Run(ctx) // until ctx ends; leads or stands by
//
// # Locks and goroutines
//
// Scheduler.mu guards the desired pools and the last status; it is never
// held while calling out. The machine is owned by the leader loop and has
// no lock. Run owns the HTTP server and the campaign loop; each
// leadership term owns its subscriber, status publisher, members watcher,
// lease keeper and pool autoscaler goroutines and waits for them. api.Lock runs its own session-renewal and lock-monitor
// goroutines, which end shortly after the lock is released.
package mesos
