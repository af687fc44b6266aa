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
// mem, disk, command, URIs and environment. Instance i of pool p is a slot;
// a slot has at most one task it keeps, whose Mesos task ID
// "<pool>.<i>.<random>" is also the node's ID. A node joins the cluster
// through Consul (SLUICE_CONSUL, SLUICE_CLUSTER in its environment).
//
// # How a task comes to run
//
//	SetPools ──► slot pending ──► REVIVE ──► OFFERS ──► fit: cpus, mem, disk in one offer,
//	                                                    fewest tasks of the pool on the agent
//	        persist the task ID (Consul KV) ──► ACCEPT/LAUNCH, other offers DECLINEd (refuse filter)
//	        UPDATE STARTING, RUNNING (acknowledged) ──► nothing pending ──► SUPPRESS
//	        UPDATE FAILED/LOST/GONE ──► backoff ──► slot pending again … more than retries ──► pool failed
//	        UPDATE KILLED after a scale-down or kill ──► slot gone, nothing relaunched
//
// After every (re)subscription the scheduler reconciles: it asks about
// each task it knows, and about all of the framework's tasks; a slot whose
// task has not been confirmed is not relaunched, so no task is launched
// twice. Unknown live tasks are adopted into a free slot or killed.
//
// # Structure
//
// The decisions are a state machine without I/O (machine: offers.go,
// tasks.go, reconcile.go, persist.go, status.go), driven by one goroutine
// per leadership term (leader.go) that feeds it events (subscribe.go), the
// clock and the desired pools, and carries out its output: persist, then
// calls to the master. ha.go elects the leader with a Consul lock and
// fences its writes; the status (package mesosstatus, a leaf without
// mesos-go) is published to Consul for mesosstatus.ReadStatus.
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
// leadership term owns its subscriber and status publisher goroutines and
// waits for them. api.Lock runs its own session-renewal and lock-monitor
// goroutines, which end shortly after the lock is released.
package mesos
