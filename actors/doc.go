// Package actors is Sluice's runtime on one node: every operator instance is
// a protoactor-go actor, supervised by a per-operator supervisor actor, with
// its state in the node's Pebble database (package persistence).
//
// The package is the instance runtime and the node; seven concepts live
// apart: the sending side of the data plane (route tables, output buffers,
// batching, credits) is package actors/flow, which knows nothing of actors;
// the checkpoint machinery (checkpointer, checkpoint coordinator,
// rollbacks, savepoints, restorer) is actors/ckpt and placement with the
// state handoff (the coordinator) is actors/handoff, both reaching the node
// through an interface this package implements (ckptNode, handoffNode);
// what the node publishes about itself (health, status, dead letters shown,
// the journal of cluster events, the Observer hooks) is actors/status,
// whose health monitor reaches the node through healthNode; the transport
// between nodes (protoactor remote, mutual TLS, addressing to one process)
// is actors/transport, reading a stream from outside (subscriptions) is
// actors/tail, and the messages that cross nodes are package
// actors/wire.
//
// # Files
//
//	node.go         Node: start, stop, leave, status; the node's timers
//	instance.go     an instance and its messages: input, stash, the send rule
//	attempt.go      running one record, timer or Poll; failures, dead letters
//	lifecycle.go    activate, release, restart, stop, commit
//	operator.go     per-operator supervisor and restart strategy
//	strikes.go      which failures count toward the restart policy
//	placing.go      the node's side of actors/handoff: handoffNode, the route table
//	checkpoints.go  the node's side of actors/ckpt: ckptNode, the Node's checkpoint methods
//	checkpointing.go an instance's part in checkpoints (barriers, snapshots, sink commits)
//	rollback.go     an instance's part in rollbacks (reset, restore, admit), lost batches
//	dispatcher.go   what arrives from other nodes, converted to local messages
//	remote.go       the node's side of actors/transport: startRemote, vouched, replyTo
//	subscribe.go    the node's side of actors/tail: tailNode, Subscribe, forgetTail
//	dest.go         flow.Dest for local and remote instances
//	durability.go   at-least-once bookkeeping (durable acks, rewinds)
//	streams.go      records of streams nobody reads
//	context.go      the core.Context handed to operators
//	reporting.go    the node's side of actors/status: healthNode, Health, Status, Events
//	observe.go      an instance's calls of the status.Observer; trace headers
//	timers.go, statelog.go, config.go, messages.go
//
// # A record's path
//
// Context.Produce(stream, rec) hands the record to the instance's
// flow.Producer, which looks the stream up in the node's route table (one
// subscription per operator reading it), lets the input's routing pick an
// instance (group-by: key → key group → instance; shuffle: random;
// round-robin: next in turn; broadcast: all) and appends the record to its
// output buffer for that instance. A buffer leaves as one batch when it
// holds BatchSize records, or when the producing instance has caught up
// with its mailbox (instance.send is the one rule).
//
// To an instance on the same node the batch goes straight to its mailbox
// (localDest). To an instance on another node (remoteDest) its records are
// packed into one wire.RecordBatch, encoded once into the buffer that is
// sent (wire.BatchFrame), and sent over protoactor remote to that node's
// dispatcher actor, which decodes them (keys and values stay in the
// received bytes) and hands the batch to the instance's mailbox, or
// bounces it back when the instance does not run there. The instance calls ProcessRecord for each record in order and
// then acknowledges the batch; an ack (or bounce, or durable ack) to a
// producer on another node also goes through that node's dispatcher, which
// turns it back into the runtime's own message type.
//
// # Backpressure
//
// A producer may have at most Credits unacknowledged batches per
// destination (RemoteCredits per destination on another node). When a full
// buffer has no credit the producing instance is blocked: it stashes
// further input (which is itself bounded by its upstreams' credits) until
// acknowledgements arrive. Sources are polled only when not blocked.
// Nothing blocks a goroutine except Node.Produce, the edge where records
// enter from outside, under the same rule. So a reader that acknowledges
// nothing (slow, or failing and in backoff) holds back the other readers
// of its stream only once its own window is full. Memory queued per edge is
// therefore at most Credits×BatchSize records (RemoteCredits×
// RemoteBatchSize between nodes), and a batch ends at BatchBytes of records too. Produce
// refuses a record over MaxRecordBytes (ErrRecordTooLarge), so every
// message between nodes has a bound, which each node's gRPC server
// enforces (messageLimit). Cycles in the stream graph can deadlock under
// backpressure and are refused at deploy time.
//
// # Supervision
//
// A ProcessRecord, ProcessTimer or Poll error or panic fails the attempt:
// its state writes, timer changes and produced records are discarded, the
// panic reaches protoactor's mailbox, which suspends the actor and reports
// to the supervisor, and the supervisor's restartStrategy restarts it after
// an exponential backoff (which starts over after a success). The restarted
// incarnation gets a fresh Operator, state reloaded from Pebble and the same
// timers, and retries the record; after RestartPolicy.DeadLetterAfter failed
// attempts the record goes to the "<operator>.deadletter" stream. When the
// failures that count exceed the policy the instance is marked failed and
// from then on dead-letters its input, so upstream operators never stall
// and nothing is dropped silently. The failures of a record dead-lettered
// alone (the next one succeeds) do not count: see strikes.go.
//
// # Locks
//
// Almost everything runs on actor goroutines without locks. The few
// mutexes are leaves or nest in the orders written down in LOCKS.md at the
// repository root.
package actors
