// Package sdktest runs operators in memory, synchronously and
// deterministically, for unit tests: no actors, no Pebble, no goroutines.
// It is Sluice's counterpart of Kafka Streams' TopologyTestDriver and
// Flink's operator test harness.
//
// A Harness drives one operator instance: feed records on its named inputs
// (Send), call a source's Poll, move processing time (AdvanceTime fires
// SetTimer timers that are due, in time order) and the watermark
// (AdvanceWatermark fires event-time timers, in time order; End ends the
// input: the watermark passes every event time), then read what it
// produced per stream (Output, Take), its state per key group and its
// pending timers of both kinds.
//
//	h, err := sdktest.New(func() sdk.Operator { return Counter{} })
//	err = h.Send("words", sdk.Record{Key: []byte("a")})
//	got := h.Take("counts") // the records produced to "counts" so far
//
// The harness implements sdk.Context and sdk.State with the runtime's
// semantics:
//   - a record from a group-by input is processed in its key's key group
//     (placement.KeyGroup, as the runtime does), a timer in the key group it
//     was set in, anything else (other routings, Init, Poll) in the
//     instance's first key group; State.Scan sees the current key group
//     only, in key order, and sdk.ScanAllGroups every key group of the
//     instance;
//   - a record produced with a zero EventTime takes the event time of the
//     record or timer being processed (a processing-time timer's or event
//     timer's due time), or the harness's processing time in Poll;
//   - a callback that fails (error or panic) has no effect: its state
//     writes, timer changes and produced records are discarded, the error
//     is returned to the test, and the instance restarts as in the runtime
//     (a fresh Operator from the Factory, then Init); a record refused as
//     bad (sdk.ErrBadRecord) is instead dead-lettered at once, with the
//     runtime's headers, and the operator goes on without a restart;
//   - producing to a stream that is neither declared nor the operator's
//     dead-letter stream (sdk.DeadLetterStream) is sdk.ErrUnknownStream; setting
//     an event-time timer on an operator that is not an
//     sdk.EventTimerProcessor is sdk.ErrNotEventTimerProcessor; a
//     watermark never goes back;
//   - a Poll error wrapping sdk.ErrTransient is not a failure: the Poll's
//     records and writes are kept, the operator is not restarted, and the
//     error is returned (the runtime backs off and polls again);
//   - a source with Metadata.Watermarks (or a sdk.WatermarkGenerator)
//     raises its watermark after each Poll; a source whose Poll returns
//     sdk.ErrEndOfStream finishes and its watermark goes to EndOfTime.
//
// A Graph wires several operators (each with its parallelism, records
// routed by each input's routing) and runs them to quiescence after every
// step. After each Poll the other operators' watermark follows the
// sources' (the minimum over their instances; PollSources and RunSources
// poll them all), and AdvanceWatermark and End move it by hand;
// watermarks advance operator by operator in stream order, so what an
// upstream operator's timers produce reaches downstream before the
// downstream watermark passes it, as watermarks travel in band in the
// runtime.
//
// Checkpoints (exactly-once) follow the runtime's order of calls
// (actors/checkpointing.go, actors/rollback.go), so a connector's test
// needs no hand-made context:
//   - Checkpoint(id), when barrier id has passed everything sent or polled
//     before: an sdk.Committer's PreCommit(id) runs in the instance's
//     first key group, then the committed state, timers and watermark are
//     checkpoint id's Snapshot. A failing PreCommit has no effect, fails
//     the checkpoint (no snapshot) and does not restart the operator.
//     Ids increase, across restores too;
//   - Complete(id), once every instance's snapshot is stored: Commit(id),
//     in the first key group; a failing Commit has no effect and does not
//     restart the operator (the runtime retries at the next completion);
//   - Restore(id), the rollback after a crash elsewhere: Close, then every
//     change since the snapshot is discarded, the snapshot's state, timers
//     and watermark restored, a fresh Operator from the Factory
//     initialised, and Commit(id) called again (so it must be idempotent:
//     the checkpoint may have been committed before, or not, if it
//     completed without the node hearing of it); Restore(0) starts from
//     empty state without a Commit. Crash(id) is the same after the
//     process died, without Close; Rollback restores the newest checkpoint
//     completed (as a crash anywhere does);
//   - New with WithSnapshot (and WithParallelism for a rescale) starts an
//     instance from snapshots of one checkpoint, taking the key groups it
//     owns, then Init, then Commit(id);
//   - Flush calls an sdk.Flusher's Flush, as the runtime does before each
//     commit of state under the other guarantees.
//
// At-least-once sources (sdk.Replayable): Position flushes an
// sdk.Flusher and takes the source's position, as a commit of state does;
// Durable hands it back once downstream is durable (MarkDurable does
// both); Rewind is what the runtime calls after another node crashed.
//
// Graph.Checkpoint, Complete and Restore do the same for every instance,
// in stream order; Graph.Snapshot returns an operator's snapshots.
//
// A typed pipeline (sdk/stream) runs in a Graph from the factories its
// Build returns, with typed input and output: stream.Stream.Send and
// SendAt encode values into the stream a From reads, stream.Out.Take
// decodes what an Output or To received.
package sdktest
