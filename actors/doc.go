// Package actors is Sluice's runtime on one node: every operator instance is
// a protoactor-go actor, supervised by a per-operator supervisor actor, with
// its state in the node's Pebble database (package persistence).
//
// # A record's path
//
// Context.Produce(stream, rec) looks the stream up in the node's route
// table, which lists the subscribing operators; for each, the input's
// routing picks an instance (group-by: key → key group → instance; shuffle:
// random; round-robin: next in turn; broadcast: all) and the record is
// appended to the producer's output buffer for that instance. A buffer is
// sent as one batchMsg when it holds BatchSize records, or when the producer
// has caught up with its mailbox. The receiving instance calls
// ProcessRecord for each record in order and then acknowledges the batch.
//
// # Backpressure
//
// A producer may have at most Credits unacknowledged batches per
// destination. When a full buffer has no credit the producing instance is
// blocked: it stashes further input (which is itself bounded by its
// upstreams' credits) until acknowledgements arrive. Sources are polled only
// when not blocked. Nothing blocks a goroutine except Node.Produce, the edge
// where records enter from outside. Memory queued per edge is therefore at
// most Credits×BatchSize records. Cycles in the stream graph can deadlock
// under backpressure and should be avoided.
//
// # Supervision
//
// A ProcessRecord, ProcessTimer or Poll error or panic fails the attempt:
// its state writes, timer changes and produced records are discarded, the
// panic reaches protoactor's mailbox, which suspends the actor and reports
// to the supervisor, and the supervisor's restartStrategy restarts it after
// an exponential backoff. The restarted incarnation gets a fresh Operator,
// state reloaded from Pebble and the same timers, and retries the record;
// after RestartPolicy.DeadLetterAfter failed attempts the record goes to the
// "<operator>.deadletter" stream. When restarts exceed the policy the
// instance is marked failed and from then on dead-letters its input, so
// upstream operators never stall and nothing is dropped silently.
package actors
