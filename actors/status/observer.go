package status

import (
	"strconv"
	"time"
)

// Observer receives the runtime's observations, so that tracing and
// metrics attach from outside the core (package telemetry implements it
// with OpenTelemetry). Its methods are called from instance goroutines:
// they must be fast and safe for concurrent use.
//
// Records are traced through W3C trace context in their TraceHeader
// header. A source's new records are sampled by Sample; every operator that
// processes a traced record gets a span (StartSpan), and the records it
// produces meanwhile carry that span's context on, across nodes. Untraced
// records cost the runtime a scan of their (usually empty) headers and no
// allocation.
type Observer interface {
	// Sample reserves the next n records of source operator's (counted
	// per operator on this node) for one of its instances, and tells
	// which of them start a trace: those at offsets first, first+every,
	// first+2·every, … below n; every is 0 when none does. An instance
	// reserves 64 records at a time, so that a decision costs it a
	// comparison instead of a call per record.
	Sample(operator string, n int) (first, every int)
	// StartSpan starts a span: of an operator processing a traced record
	// (info.Parent is the record's trace header), or of a source producing
	// a sampled record (info.Parent is ""). It returns the trace header
	// value for records produced within the span and a function ending it.
	StartSpan(info SpanInfo) (traceparent string, end func(err error))
	// Processed reports one processed record, for a sample of the records
	// (see ProcessedSampleEvery): how long ProcessRecord took, and how
	// long since the record's event time it finished.
	Processed(operator string, index int, processing, sinceEvent time.Duration)
	// Restarted reports a restart of an instance.
	Restarted(operator string, index int)
	// DeadLettered reports a record or timer sent to a dead-letter stream.
	DeadLettered(operator string, index int)
}

// CheckpointObserver is implemented by Observers that also want the
// checkpoints this node coordinated: each complete one (err nil) with its
// duration, bytes uploaded and total size, and each failed one.
type CheckpointObserver interface {
	Checkpointed(id uint64, took time.Duration, uploaded, size int64, err error)
}

// Stage names a part of a record's latency that a StageObserver is told.
type Stage uint8

// The stages. Processing itself is Observer.Processed's.
const (
	// StageSent is the time from a record's event time to its batch
	// leaving the producer that sent it here: the hops before, and the
	// wait in that producer's output buffer (for the first operator after
	// a source, only the source's buffering).
	StageSent Stage = iota
	// StageQueue is the time from a batch leaving its producer to the
	// record's processing starting: transport, mailbox, and the records
	// ahead of it in the batch.
	StageQueue
	// StageCommit is one state commit of an instance, during which it
	// processes nothing.
	StageCommit
)

// String returns the stage's name.
func (s Stage) String() string {
	switch s {
	case StageSent:
		return "sent"
	case StageQueue:
		return "queue"
	case StageCommit:
		return "commit"
	}
	return "stage(" + strconv.Itoa(int(s)) + ")"
}

// StageObserver is implemented by Observers that also want a latency
// breakdown: StageSent and StageQueue for the records Observer.Processed
// times (when the batch's send time is known), StageCommit for every
// periodic state commit. Like Observer's, its method must be fast and
// safe for concurrent use.
type StageObserver interface {
	Stage(operator string, index int, stage Stage, d time.Duration)
}

// TraceHeader is the record header carrying W3C trace context.
const TraceHeader = "traceparent"

// ProcessedSampleEvery is how many records an instance processes per call
// of Observer.Processed (and of StageObserver.Stage for the sent and queue
// stages) at high rates. A timed record costs two clock reads, instance
// lookups and histogram updates, all on cold memory: at one in 64 that was
// about 2 % of a word count's CPU. One in 256 still times about 400
// records a second of an instance processing 100 k. At low rates batches
// are small, and the first record of a batch of fewer than
// ProcessedSampleEvery/4 records is timed too, so that the histograms of a
// slow stream fill.
const ProcessedSampleEvery = 256

// SpanInfo describes the span of one operator handling one traced record.
type SpanInfo struct {
	// Parent is the traceparent of the record being processed; "" when a
	// source produces a new sampled record.
	Parent   string
	Operator string
	Instance int
	Node     string
	// Stream is the input stream ("" for a source).
	Stream string
	// QueueWait is how long the record's batch waited between being sent
	// and being processed (0 when unknown).
	QueueWait time.Duration
	// Start is when processing began.
	Start time.Time
}
