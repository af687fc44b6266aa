// Package file provides a line source and a line sink: read a file (or
// stdin) line by line into a stream, and append a stream's records to a
// file (or stdout) one line each.
//
// # Source
//
// A source (NewSource) reads SourceConfig.Path and produces one record per
// line to SourceConfig.Stream: the value is the line without its '\n' (a
// '\r' before it is kept), the key is SourceConfig.Key(line) or empty, and
// the event time is when the line was read. A file is read by one
// instance, in order (Parallelism is 1). By default the file is bounded:
// its final line is produced even without a '\n', and the end of the file
// is the end of the stream (Poll returns sdk.ErrEndOfStream), so that an
// embedded node.Run over a file returns once everything is processed. With
// SourceConfig.Follow the source reads on as the file grows, like tail -f,
// producing a last line only once its '\n' is written. Either way an
// instance that starts again (after a failure or a restart of the runtime)
// reads on from where it stopped.
//
// A file source keeps its position, the byte offset after the last line it
// produced, in its instance's state, written in the same attempt (Poll) as
// the records of those lines: a failed attempt discards both. The runtime
// commits state at least every commit interval (node.Config.CommitInterval,
// 200 ms by default, the checkpoint interval up to 1 s under exactly-once)
// and when it stops, independently of what happened to the records
// downstream. Hence:
//
//   - Clean stop (Runtime.Stop, SIGTERM with node.Run) and start on the same
//     data directory: the runtime stops polling, processes the records in
//     flight, closes the operators (a file sink writes and fsyncs) and
//     commits. The source resumes at the first line it had not produced:
//     every line exactly once, as long as the stop completes within its
//     timeout (records still in flight when it expires are lost while the
//     offset after them is kept: at most once for those) and the sink's
//     last write succeeds (a failed one is logged; its lines are lost).
//   - A planned move in a cluster (rescale, a node leaving) commits the
//     offset and hands it over with the instance's state, and delivers
//     what was produced: as a clean stop, if the file is at the same path
//     on the new node.
//   - A failed Poll (a read error, a panic in Key) restarts the instance,
//     which resumes at the offset of the last successful Poll: no line lost
//     or repeated.
//   - A crash of the process (kill -9), under at-least-once or none: the
//     committed offset can be behind the lines produced, by up to one
//     commit interval of lines, which are read and produced again
//     (duplicates); and it can be ahead of the lines that reached their
//     destination, as records in output buffers, mailboxes and sink
//     buffers are lost (losses). So a crash gives neither at-least-once
//     nor at-most-once delivery. The source is not sdk.Replayable, so
//     node.Config.AtLeastOnce does not change this.
//   - Under exactly-once (sdk.ExactlyOnce) a crash costs nothing: the source
//     is sdk.Resumable, the runtime restores the offset of the last
//     completed checkpoint, and the source produces again exactly the
//     lines that followed it (see "Exactly-once" below).
//   - In a cluster, state lost with a crashed node is lost for the source
//     too: its instance starts elsewhere from the offset that node has, if
//     any, else from the start of the file. The file is read on whichever
//     node runs the instance (pin it with node.Config.Host).
//
// The offset belongs to the absolute path: a source given another Path
// reads that file from its start. If the file is shorter than the stored
// offset (truncated or replaced), Poll fails with ErrTruncated rather than
// guess; purge the operator's state to read it again. A line longer than
// MaxLineSize goes to the operator's dead-letter stream and the source
// moves on.
//
// With Path "-" NewSource makes a *StdinSource, which reads stdin on a
// goroutine of its own (a read from stdin may block for ever, and Poll
// must return promptly) that reads up to 1,024 lines ahead of the source.
// Stdin cannot be read again, so nothing is stored and nothing resumes:
// at a clean stop the lines produced are delivered and those read ahead
// are dropped; in a crash both are lost. A StdinSource is not
// sdk.Resumable, so the runtime refuses it under exactly-once. A read
// error ends the source like the end of stdin, and is logged. A process
// reads stdin with one runtime.
//
// # Sink
//
// A sink (NewSink) reads SinkConfig.Stream (routing SinkConfig.Routing,
// shuffle by default) and appends each record to SinkConfig.Path, or
// stdout for "-" (under exactly-once: to part files, see below), as one
// line: the value (FormatValue) or the key, a tab
// and the value (FormatKeyValue), then '\n'. An instance buffers lines (up
// to BufferSize bytes) and writes them when the buffer is full, when the
// runtime flushes it (sdk.Flusher: before every commit of the instance's
// state) and when it closes. Flush and Close also fsync a file, so what
// the runtime counts as durable downstream of the sink (with
// node.Config.AtLeastOnce) is on disk. Records buffered since the last
// flush are lost in a crash.
//
// The instances of every sink in the process that write one path share
// one open file and its lock, and write whole lines under the lock, so
// their lines never interleave; the same holds for stdout. (Processes do
// not share the lock: do not point sinks in several processes at one file
// unless the file system makes appends atomic.) Lines of one instance keep
// their order; lines of different instances are interleaved line by line
// in no particular order. The sink does not escape anything: a value (or,
// with FormatKeyValue, a key) holding '\n' makes more than one line.
//
// # Exactly-once
//
// Under exactly-once (sdk.ExactlyOnce) a file sink instance does not
// append to Path: it writes the lines between two checkpoint barriers to a
// part of its own, next to Path, and a part becomes visible only when its
// checkpoint is complete (two-phase commit, sdk.Committer):
//
//	.out.txt.inprogress-<tag>              lines since the last barrier
//	.out.txt.pending-<checkpoint>-<tag>    at the barrier (PreCommit): written, fsynced, renamed, directory fsynced
//	out.txt.part-<checkpoint>-<tag>        checkpoint complete (Commit): renamed, directory fsynced
//
// for Path out.txt, where checkpoint has 20 digits and tag is
// "<operator>-<first key group, 5 digits>". A barrier with no line since
// the previous one makes no part. Read the output as the committed parts
// in name order, which is checkpoint order (lines of one checkpoint are
// grouped by instance, each instance's in the order it received them):
//
//	cat out.txt.part-*
//
// The parts in progress and pending are hidden (their names start with
// '.') and never match that pattern. A reader may move committed parts
// away once read. After a crash the runtime restores every instance from
// the last completed checkpoint: Init deletes the instance's part in
// progress (its lines come again), and Commit renames the pending parts of
// the restored checkpoint (a part already renamed, or already moved away,
// counts as committed). Pending parts of later checkpoints that the
// restored state does not list stay hidden until a newer checkpoint
// completes, then go: one may belong to a checkpoint that completed while
// its node was not told, which the runtime may still restore.
// So each line is in exactly one committed part, once. The bookkeeping is
// the connector kit's (sdk/connect.TwoPhase, the part writer its
// Transactions): State holds "file/txn/<tag>/<checkpoint>" → Path per
// pending part and "file/writer/<tag>" → Path per instance, so that after
// a rescale the instance holding a former instance's state commits and
// cleans up its parts. The source's offset is a connect.Positions entry,
// "file/offset/<path>". A failed fsync is not retried (the kernel may have dropped the
// data): the sink fails until the instance is restored. With Path "-"
// NewSink makes a *StdoutSink, which cannot take lines back and is not an
// sdk.Committer: the runtime refuses it under exactly-once.
//
// # Example
//
// Copy the lines of in.txt to out.txt, keyed by their first word:
//
//	src, err := file.NewSource(file.SourceConfig{
//		Name: "read", Stream: "lines", Path: "in.txt",
//		Key: func(line []byte) []byte { k, _, _ := bytes.Cut(line, []byte(" ")); return k },
//	})
//	if err != nil {
//		return err
//	}
//	sink, err := file.NewSink(file.SinkConfig{
//		Name: "write", Stream: "lines", Path: "out.txt", Format: file.FormatKeyValue,
//	})
//	if err != nil {
//		return err
//	}
//	return node.Run(ctx, node.Config{NodeConfig: node.NodeConfig{DataDir: "data"}}, src, sink)
package file
