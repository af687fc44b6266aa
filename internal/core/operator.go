package core

import (
	"context"
	"log/slog"
	"time"
)

// Operator is the unit of work: it reads records from the streams named in
// its Metadata, keeps state, sets timers and produces records to other
// streams.
//
// The runtime creates one Operator value per instance (through a Factory)
// and calls its methods from one goroutine at a time, so an Operator needs
// no locking for its own fields. After a failure the instance is restarted
// with a fresh value from the Factory; anything that must survive belongs in
// State, not in fields.
type Operator interface {
	// Metadata describes the operator: its name, inputs, outputs,
	// parallelism and restart policy. It is called once on a fresh value,
	// before any other method, and must not depend on Init.
	Metadata() Metadata
	// Init prepares an instance before it receives records or timers. It
	// runs on every (re)start of the instance; State and timers already hold
	// what was committed before.
	Init(ctx Context) error
	// ProcessRecord handles one record from one of the operator's inputs.
	// An error or panic fails the attempt: its state writes, timers and
	// produced records are discarded, the instance restarts per its
	// RestartPolicy and the record is tried again, up to
	// RestartPolicy.DeadLetterAfter attempts.
	ProcessRecord(ctx Context, rec Record) error
	// ProcessTimer handles a timer set with Context.SetTimer whose time has
	// come. key is the timer's key and at the time it was set for. Failures
	// are handled as in ProcessRecord.
	ProcessTimer(ctx Context, key string, at time.Time) error
}

// Closer is implemented by operators that release resources when an
// instance stops or is about to restart. Close is called on the instance's
// goroutine; errors are logged.
type Closer interface {
	Close(ctx Context) error
}

// Source is implemented by operators that create records rather than (or as
// well as) receiving them: generators, Kafka consumers, file readers.
//
// The runtime calls Poll repeatedly on the instance's goroutine, whenever the
// instance has nothing else to do and downstream has room, so a source never
// outruns its consumers. Poll produces zero or more records with
// Context.Produce and returns; it should return within about 100 ms when no
// data is available (use ctx for deadlines). When Poll produces nothing the
// runtime waits a little (up to 100 ms) before calling it again. A Poll error
// is a failure and restarts the instance like a ProcessRecord error.
type Source interface {
	Poll(ctx Context) error
}

// Replayable is implemented by sources that can produce their records again
// (such as a Kafka consumer). With at-least-once delivery on, the runtime
// tracks when everything a source produced has had its effects made durable
// downstream (state committed, sinks flushed) and tells the source, which
// may then commit its position (Kafka offsets); when a node crashes and
// work in flight is lost, the runtime makes every replayable source rewind
// to its last durable position. All methods run on the instance's
// goroutine.
type Replayable interface {
	Source
	// Position returns the source's position now; it is called when the
	// instance commits, and later handed back to Durable.
	Position() any
	// Durable reports that everything produced before pos has its effects
	// durable downstream.
	Durable(ctx Context, pos any)
	// Rewind makes the source produce again from its last durable position.
	Rewind(ctx Context) error
}

// Flusher is implemented by operators that buffer output outside the
// runtime (a Kafka producer): Flush must make it durable (e.g. wait for the
// broker's acknowledgements). The runtime calls it before each commit of
// the instance's state, so that what the runtime counts as durable is.
type Flusher interface {
	Flush(ctx Context) error
}

// Factory returns a fresh Operator value. The runtime calls it for every
// instance and every restart.
type Factory func() Operator

// Context is handed to every Operator callback. It is also a
// context.Context that is cancelled when the instance stops, so it can be
// passed to blocking calls.
//
// A Context is valid only during the callback it was passed to and only on
// that goroutine.
type Context interface {
	context.Context

	// Produce sends rec to the named stream, which must be one of the
	// operator's declared outputs. Records are delivered after the current
	// callback returns successfully; if it fails they are discarded.
	Produce(stream string, rec Record) error
	// SetTimer arranges for ProcessTimer(key, at) to be called at or after
	// at. Setting a timer with an existing key replaces it. Timers are
	// stored with the instance's state and survive restarts; a timer whose
	// time passed while the instance was down fires when it starts.
	SetTimer(key string, at time.Time) error
	// DeleteTimer removes the timer with that key, if any.
	DeleteTimer(key string) error
	// EventTime: event-time timers and the instance's watermark.
	EventTime
	// State returns the instance's key-value state.
	State() State
	// Instance describes the running instance.
	Instance() InstanceInfo
	// Logger returns a logger with the operator and instance as attributes.
	Logger() *slog.Logger
}

// State is an operator instance's local key-value store, kept in the node's
// Pebble database.
//
// State is partitioned by key group. While a record from a group-by input is
// processed, reads and writes go to the key group of the record's key; while
// a timer fires, to the key group the timer was set in; otherwise (records
// from other routings, Init, Poll) to the instance's first key group. Key
// groups, and so state, move as units when an operator is rescaled.
//
// Writes are visible to later reads at once, and are committed to disk in
// batches (at least every commit interval, by default 200 ms, and when the
// instance stops). Slices returned by Get and passed to Scan callbacks must
// not be modified; Get's result stays valid, Scan's only during the callback.
type State interface {
	// Get returns the value stored under key in the current key group, or
	// ErrNotFound.
	Get(key []byte) ([]byte, error)
	// Set stores value under key in the current key group. It keeps its own
	// copies of key and value.
	Set(key, value []byte)
	// Delete removes key from the current key group.
	Delete(key []byte)
	// Scan calls fn for every key with the given prefix in the current key
	// group (that of the record's key, of the timer, or the instance's
	// first), in key order, so that it costs what it returns. fn's error
	// stops the scan and is returned. To see every key group the instance
	// owns (bookkeeping read once in Init, such as a connector's positions
	// after a rescale), use AllGroupsScanner.
	Scan(prefix []byte, fn func(key, value []byte) error) error
}

// OwnedSetter is implemented by the runtime's State: SetOwned is Set
// without the copy of value, which the State keeps (the caller must not
// modify it afterwards). It saves an allocation per write for values made
// only to be stored, such as PutInt64's.
type OwnedSetter interface {
	SetOwned(key, value []byte)
}

// AllGroupsScanner is implemented by the runtime's State: ScanAllGroups is
// Scan over every key group the instance owns, in order of key group, then
// key. It seeks once per key group, so it is meant for reads made once
// (Init), not per record.
type AllGroupsScanner interface {
	ScanAllGroups(prefix []byte, fn func(key, value []byte) error) error
}

// InstanceInfo describes one running operator instance.
type InstanceInfo struct {
	// Operator is the operator's name.
	Operator string
	// Index is the instance's index in [0, Parallelism).
	Index int
	// Parallelism is the operator's number of instances.
	Parallelism int
	// Node is the id of the node the instance runs on.
	Node string
	// KeyGroups is the operator's total number of key groups.
	KeyGroups int
	// FirstGroup and EndGroup bound the key groups this instance owns:
	// [FirstGroup, EndGroup).
	FirstGroup, EndGroup int
	// Guarantee is the node's delivery guarantee, for connectors whose
	// behaviour depends on it (where a source resumes, how a sink writes).
	Guarantee Guarantee
	// Window is the operator's windows as deployed (Metadata.Window, which
	// a manifest may have changed from what the operator's Metadata
	// declares); nil when it has none. It must not be modified.
	Window *WindowSpec
}

// StateLog mirrors operator state to a durable external log, so that state
// survives the crash of the node that held it (connectors/kafka implements
// it with one compacted topic per operator, a partition per key group).
//
// Each commit of an instance's state appends the committed writes; when an
// instance becomes active and no node handed its state over (its previous
// node crashed), it is restored from the log first. Appends that fail are
// retried at the next commit; until they succeed the instance's durability
// snapshots wait. Methods are called from instance goroutines, several at
// once.
type StateLog interface {
	// Append durably logs committed writes of operator op (a nil Value is
	// a deletion), blocking until the log has acknowledged them or ctx ends.
	Append(ctx context.Context, op string, keyGroups int, kvs []KV) error
	// Restore calls fn, in log order, with every logged write of operator
	// op in key groups [first, end).
	Restore(ctx context.Context, op string, keyGroups, first, end int, fn func(KV) error) error
}

// KV is one committed state write for a StateLog: the key group it belongs
// to, and an opaque key (the runtime's own encoding, to be handed back
// unchanged by Restore) and value; a nil Value deletes the key.
type KV struct {
	KeyGroup   int
	Key, Value []byte
}

// Resumable is implemented by sources that keep their read position in
// State, so that restoring a checkpoint's state makes them produce again
// exactly what came after the checkpoint. Exactly-once processing requires
// every source to be Resumable; the runtime refuses others at deploy time.
type Resumable interface {
	Source
	// ResumesFromState documents the contract; the runtime never calls it.
	// After Init, Poll continues from the position State holds: Poll
	// writes its position to State as it produces (in the same attempt),
	// so a checkpoint holds the position of exactly what was produced.
	ResumesFromState()
}

// Committer is implemented by operators that write to an external system
// (sinks) and take part in exactly-once checkpoints by two-phase commit.
// Under exactly-once, an operator that is a Flusher must be a Committer
// (the runtime refuses it at deploy time otherwise). Both methods run on
// the instance's goroutine.
type Committer interface {
	// PreCommit is called at checkpoint's barrier, after every record
	// before the barrier was processed: it makes what was written since
	// the previous barrier durable but not yet visible (flush an open
	// transaction, close a pending file) and records in State what Commit
	// will need; those State writes are part of the checkpoint. Records
	// after the barrier go to a new transaction. An error fails the
	// checkpoint (the instance is not restarted).
	PreCommit(ctx Context, checkpoint uint64) error
	// Commit makes visible what PreCommit prepared for checkpoint and for
	// every earlier checkpoint not yet committed, reading what to commit
	// from State. It is called when the checkpoint is complete, and again
	// after the instance was restored from that checkpoint, so it must be
	// idempotent (committing an already committed transaction succeeds).
	// Anything prepared for a later checkpoint that State does not know
	// of must be discarded by Init. An error is retried at the next
	// completion.
	Commit(ctx Context, checkpoint uint64) error
}
