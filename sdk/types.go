package sdk

import "github.com/sluicehq/sluice/internal/core"

// Operator is the unit of work: the runtime creates one value per instance
// (with a Factory) and calls it on the instance's goroutine only.
//
//	Metadata() Metadata
//		Name, inputs (stream + routing), outputs, parallelism, key groups
//		and restart policy. Called once on a fresh value, before Init.
//	Init(ctx Context) error
//		Runs on every (re)start; State and timers hold what was committed.
//	ProcessRecord(ctx Context, rec Record) error
//		One record of one input. An error or panic fails the attempt: its
//		state writes, timers and produced records are discarded, the
//		instance restarts per its RestartPolicy and the record is tried
//		again, then dead-lettered to "<operator>.deadletter".
//	ProcessTimer(ctx Context, key string, at time.Time) error
//		A timer set with Context.SetTimer is due; failures as above.
//
// Optional interfaces add to it: Source (Poll), Closer, Flusher,
// Committer, Resumable, Replayable.
type Operator = core.Operator

// EventTimerProcessor is implemented by operators that set event-time
// timers:
//
//	ProcessEventTimer(ctx Context, key string, at time.Time) error
//
// It is called once the instance's watermark reaches at, on the key group
// the timer was set in; failures are handled as for ProcessRecord.
type EventTimerProcessor = core.EventTimerProcessor

// Closer is implemented by operators that release resources when an
// instance stops or is about to restart:
//
//	Close(ctx Context) error
//
// It runs on the instance's goroutine; errors are logged.
type Closer = core.Closer

// Source is implemented by operators that create records (generators,
// Kafka consumers, file readers):
//
//	Poll(ctx Context) error
//
// The runtime calls Poll on the instance's goroutine whenever the instance
// has nothing else to do and downstream has room, so a source never
// outruns its consumers. Poll produces zero or more records with
// ctx.Produce and returns, within about 100 ms when no data is available;
// after a Poll that produced nothing the runtime waits up to 100 ms. An
// error restarts the instance like a ProcessRecord error.
//
// Memory: the records of one Poll are held until it returns (they are
// discarded if it fails), so the runtime's memory bound applies between
// Polls, not within one: produce a bounded batch per call (the connectors
// produce at most a few thousand) rather than everything available.
type Source = core.Source

// Replayable is implemented by sources that can produce again from a
// durable position (Kafka), for at-least-once delivery. Its methods run on
// the instance's goroutine:
//
//	Source
//	Position() any                // the position now; called when the instance commits
//	Durable(ctx Context, pos any) // everything produced before pos is durable downstream
//	Rewind(ctx Context) error     // produce again from the last durable position
type Replayable = core.Replayable

// Flusher is implemented by operators that buffer output outside the
// runtime (a Kafka producer); Flush runs before every state commit.
//
//	Flush(ctx Context) error
type Flusher = core.Flusher

// Resumable is implemented by sources that keep their read position in
// State, so that a restored checkpoint makes them produce again exactly
// what came after it; exactly-once requires every source to be Resumable:
//
//	ResumesFromState() // a marker: Poll continues from the position in State
type Resumable = core.Resumable

// Committer is implemented by sinks that take part in exactly-once
// checkpoints by two-phase commit:
//
//	PreCommit(ctx, checkpoint) error // at the barrier: flush, keep the transaction in State
//	Commit(ctx, checkpoint) error    // checkpoint complete (or restored): make it visible; idempotent
type Committer = core.Committer

// Factory returns a fresh Operator; it is called for every instance and
// every restart.
type Factory = core.Factory

// Context is handed to every operator callback; it is also a
// context.Context, done when the instance stops.
//
//	Produce(stream string, rec Record) error
//		Sends rec to one of the operator's declared outputs; delivered
//		after the callback returns successfully, discarded if it fails.
//	SetTimer(key string, at time.Time) error
//	DeleteTimer(key string) error
//		Durable timers (one per key; setting again replaces it), fired by
//		ProcessTimer at or after at, also after a restart.
//	SetEventTimer(key string, at time.Time) error
//	DeleteEventTimer(key string) error
//		Event-time timers, fired by ProcessEventTimer (EventTimerProcessor)
//		once the instance's watermark reaches at.
//	Watermark() time.Time
//		The minimum of the watermarks received on the input edges.
//	State() State
//		The instance's key-value state.
//	Instance() InstanceInfo
//		Operator, index, parallelism, node, key groups, guarantee.
//	Logger() *slog.Logger
//		A logger with the operator and instance as attributes.
type Context = core.Context

// State is an instance's key-value store, partitioned by key group and kept
// in Pebble.
//
//	Get(key []byte) ([]byte, error)   // ErrNotFound when absent
//	Set(key, value []byte)            // keeps its own copies
//	Delete(key []byte)
//	Scan(prefix []byte, fn func(key, value []byte) error) error
//
// While a group-by record is processed, reads and writes go to the key
// group of the record's key; while a timer fires, to the timer's key group;
// otherwise (other routings, Init, Poll) to the instance's first key group.
// Writes are visible at once and committed in batches (every 200 ms, at
// stops and at checkpoints). GetInt64 and PutInt64 store counters.
type State = core.State

// AllGroupsScanner is implemented by the runtime's State: Scan over every
// key group the instance owns (see ScanAllGroups).
//
//	ScanAllGroups(prefix []byte, fn func(key, value []byte) error) error
type AllGroupsScanner = core.AllGroupsScanner

// OwnedSetter is implemented by the runtime's State: SetOwned(key, value)
// is Set without the copy of value, which the State keeps, so the caller
// must not modify value afterwards (PutInt64 uses it).
//
//	SetOwned(key, value []byte)
type OwnedSetter = core.OwnedSetter

// Record is one item on a stream.
//
// Its fields (go doc internal/core.Record has them in full):
//
//	Key []byte          // Key routes the record on group-by inputs and names it in logs.
//	Value []byte        // Value is the payload.
//	EventTime time.Time // EventTime is when the event happened.
//	Headers []Header    // Headers carry metadata such as trace context and, on dead letters, the error.
//	Stream string       // Stream is the stream the record arrived on.
type Record = core.Record

// Header is one record header.
//
// Its fields (go doc internal/core.Header has them in full):
//
//	Key string
//	Value string
type Header = core.Header

// Metadata describes an operator.
//
// Its fields (go doc internal/core.Metadata has them in full):
//
//	Name string                   // Name identifies the operator; it must be unique in a runtime and may contain letters, …
//	Inputs []Input                // Inputs are the streams the operator subscribes to, each with its routing.
//	Outputs []string              // Outputs are the streams the operator may produce to.
//	Parallelism int               // Parallelism is the number of instances; 0 means 1.
//	KeyGroups int                 // KeyGroups is the number of key groups that keys (and state) are hashed into; 0 means 256.
//	Restart RestartPolicy         // Restart says how failures are handled; zero fields take defaults.
//	Watermarks *WatermarkStrategy // Watermarks, on a source, makes it emit watermarks derived from the event times of the …
//	Window *WindowSpec            // Window, on a window operator (sdk/window), is its windows; a manifest may change them …
//	Autoscale *AutoscaleSpec      // Autoscale turns on the autoscaler for the operator, within its bounds (see …
type Metadata = core.Metadata

// AutoscaleSpec turns on the autoscaler for an operator (Metadata.Autoscale;
// nil means off); docs/autoscaling.md says how it decides.
//
// Its fields (go doc internal/core.AutoscaleSpec has them in full):
//
//	Min int                   // Min is the fewest instances; 0 means 1.
//	Max int                   // Max is the most instances; 0 means the key-group count.
//	TargetUtilization float64 // TargetUtilization is the busy fraction (0–1] the autoscaler sizes each instance for; …
//	ScaleDownAfter time.Duration // ScaleDownAfter is the stabilisation window of down-scales: fewer instances are …
//	CoolDown time.Duration    // CoolDown is the least time after a change before the next one; 0 means …
//	DryRun bool               // DryRun makes the autoscaler only recommend (sluice autoscale status, GET …
type AutoscaleSpec = core.AutoscaleSpec

// Input is a subscription to a stream with a routing.
//
// Its fields (go doc internal/core.Input has them in full):
//
//	Stream string
//	Routing Routing
type Input = core.Input

// Routing says which instance receives a record.
type Routing = core.Routing

// RestartPolicy says how failures are handled.
//
// Its fields (go doc internal/core.RestartPolicy has them in full):
//
//	MaxRestarts int              // MaxRestarts is the number of failures that count (see above) allowed within Window; 0 …
//	Window time.Duration         // Window is the period over which restarts are counted; 0 means 1 minute.
//	InitialBackoff time.Duration // InitialBackoff is the delay before the first restart; 0 means 10 ms.
//	MaxBackoff time.Duration     // MaxBackoff caps the delay; 0 means 5 s.
//	DeadLetterAfter int          // DeadLetterAfter is the number of failed attempts after which a record or timer goes to …
type RestartPolicy = core.RestartPolicy

// WatermarkStrategy says how a source derives watermarks from event times
// (Metadata.Watermarks): bounded out-of-orderness (0: monotonic),
// idleness, interval.
//
// Its fields (go doc internal/core.WatermarkStrategy has them in full):
//
//	OutOfOrderness time.Duration // OutOfOrderness bounds how far an event time may be behind the largest one produced …
//	Idleness time.Duration       // Idleness is how long a source instance producing nothing waits before it is marked …
//	Interval time.Duration       // Interval is the least time between two watermarks of an instance; 0 means …
type WatermarkStrategy = core.WatermarkStrategy

// WatermarkGenerator is implemented by sources with a custom watermark
// strategy:
//
//	CurrentWatermark(ctx Context) time.Time
type WatermarkGenerator = core.WatermarkGenerator

// WindowSpec is a window operator's windows (Metadata.Window): what a
// manifest's window mapping sets (see sdk/window).
//
// Its fields (go doc internal/core.WindowSpec has them in full):
//
//	Type WindowType        // Type is the kind of windows (required).
//	Size time.Duration     // Size of tumbling and hopping windows (> 0).
//	Slide time.Duration    // Slide of hopping windows: a window starts every Slide (> 0, ≤ Size).
//	Gap time.Duration      // Gap of session windows (> 0).
//	Count int64            // Count of records of count windows (> 0).
//	Lateness time.Duration // Lateness is how long after a window's end late records are still added to it (≥ 0; …
//	Emit WindowEmit        // Emit says when results are produced.
type WindowSpec = core.WindowSpec

// InstanceInfo describes a running instance.
//
// Its fields (go doc internal/core.InstanceInfo has them in full):
//
//	Operator string          // Operator is the operator's name.
//	Index int                // Index is the instance's index in [0, Parallelism).
//	Parallelism int          // Parallelism is the operator's number of instances.
//	Node string              // Node is the id of the node the instance runs on.
//	KeyGroups int            // KeyGroups is the operator's total number of key groups.
//	FirstGroup, EndGroup int // FirstGroup and EndGroup bound the key groups this instance owns: [FirstGroup, EndGroup).
//	Guarantee Guarantee      // Guarantee is the node's delivery guarantee, for connectors whose behaviour depends on …
//	Window *WindowSpec       // Window is the operator's windows as deployed (Metadata.Window, which a manifest may …
type InstanceInfo = core.InstanceInfo

// MetadataError reports an invalid metadata field.
//
// Its fields (go doc internal/core.MetadataError has them in full):
//
//	Operator string // the operator's name, or its position if the name is empty
//	Field string    // e.g.
//	Problem string  // what is wrong and what is allowed
type MetadataError = core.MetadataError

// Guarantee is what a crash may cost a pipeline: ExactlyOnce, AtLeastOnce
// or NoGuarantee (see README "Guarantees").
type Guarantee = core.Guarantee

// Guarantees.
const (
	ExactlyOnce = core.ExactlyOnce
	AtLeastOnce = core.AtLeastOnce
	NoGuarantee = core.NoGuarantee
)

// ParseGuarantee parses "exactly-once", "at-least-once" or "none".
func ParseGuarantee(s string) (Guarantee, error) { return core.ParseGuarantee(s) }

// Routings.
const (
	Shuffle    = core.Shuffle
	RoundRobin = core.RoundRobin
	GroupBy    = core.GroupBy
	Broadcast  = core.Broadcast
)

// Reserved header keys the runtime sets on dead letters.
const (
	HeaderError    = core.HeaderError
	HeaderAttempts = core.HeaderAttempts
	HeaderOperator = core.HeaderOperator
	HeaderInstance = core.HeaderInstance
	HeaderStream   = core.HeaderStream
)

// Errors.
var (
	// ErrNotFound is returned by State.Get for a missing key.
	ErrNotFound = core.ErrNotFound
	// ErrUnknownStream is returned when producing to a stream that is not
	// declared (or, from outside, that nobody reads).
	ErrUnknownStream = core.ErrUnknownStream
	// ErrRecordTooLarge is returned by Produce for a record larger than
	// the node's MaxRecordBytes (key, value and headers; 4 MiB unless
	// configured): such a record could not cross to another node.
	ErrRecordTooLarge = core.ErrRecordTooLarge
	// ErrStopped is returned after the runtime stopped.
	ErrStopped = core.ErrStopped
	// ErrTransient, wrapped in an error from Poll or Flush, means "retry
	// later": the runtime records it and backs off instead of restarting.
	ErrTransient = core.ErrTransient
	// ErrBadRecord, wrapped in an error from ProcessRecord, says the
	// record itself is bad (it does not decode, a required field is
	// missing): the runtime undoes the attempt and dead-letters the record
	// at once (sluice-attempts 1), without a restart or a retry, and the
	// instance goes on with the next record. sdk/stream's decode failures
	// wrap it.
	ErrBadRecord = core.ErrBadRecord
	// ErrEndOfStream, returned by Poll, says a source has finished; the
	// end of stream flows downstream in order after its records.
	ErrEndOfStream = core.ErrEndOfStream
	// ErrNotEventTimerProcessor is returned by SetEventTimer in an
	// operator without ProcessEventTimer.
	ErrNotEventTimerProcessor = core.ErrNotEventTimerProcessor
)

// ParseRouting parses a routing name such as "group-by".
func ParseRouting(s string) (Routing, error) { return core.ParseRouting(s) }

// ValidName checks an operator, stream or kind name by the rule the
// runtime applies to Metadata: 1 to 200 characters from letters, digits,
// '-', '_' and '.', the first a letter or a digit. Names are used as URL
// path segments, file names and command-line arguments, so ".", "..",
// hidden names (".x") and flag-like names ("-x") are refused.
//
// Connectors call it in their Validate to name a bad field before the
// runtime sees the operator; the error says what is wrong and what is
// allowed, and is meant to be wrapped with the field's name.
func ValidName(name string) error { return core.ValidName(name) }

// DeadLetterStream returns the name of an operator's dead-letter stream,
// "<operator>.deadletter".
func DeadLetterStream(operator string) string { return core.DeadLetterStream(operator) }

// StateLog mirrors operator state to a durable external log, from which an
// instance whose node crashed is restored (connectors/kafka implements it
// with changelog topics):
//
//	Append(ctx, op, keyGroups, kvs []KV) error  // log committed writes durably
//	Restore(ctx, op, keyGroups, first, end, fn func(KV) error) error
type StateLog = core.StateLog

// KV is one committed state write handed to a StateLog: its key group and
// the runtime's opaque key and value (nil value: deleted).
//
// Its fields (go doc internal/core.KV has them in full):
//
//	KeyGroup int
//	Key, Value []byte
type KV = core.KV
