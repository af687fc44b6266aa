// Package connect is the connector kit: helpers that make a resumable
// source and a two-phase-commit sink short to write, with exactly-once
// semantics kept by the kit rather than by each connector. It imports
// the SDK only (sdk, sdk/codec).
//
// A resumable source (NewSource) is a Reader: Read(ctx, split, pos)
// returns the records of a split after position pos and the position after
// them, sdk.ErrEndOfStream once a bounded split has ended. The kit keeps
// each split's position in State (Positions, encoded with a codec), writes
// it in the same Poll as the records before it, so a restored checkpoint
// makes the source produce again exactly what followed it
// (sdk.Resumable), and spreads splits (files, partitions, shards) over the
// instances (Spread). A Poll goes once over the instance's splits:
//
//	Poll ─ for each split not ended: Read(split, pos) ─ Produce(recs) ─ State: pos = next
//
// A two-phase-commit sink (NewSink, or TwoPhase inside a connector's own
// operator) is Transactions, as Flink's TwoPhaseCommitSinkFunction:
// Begin, Write, PreCommit (returns a handle that State keeps), Commit
// (idempotent) and Abort, and optionally Recover (list what earlier
// incarnations prepared). The kit implements sdk.Committer:
//
//	first record after a barrier ─ Begin; each record ─ Write
//	barrier N     ─ PreCommit(N) → handle; State: txn/<writer>/N → handle
//	N complete    ─ Commit every listed txn ≤ N, in order; forget it; Abort orphans < N
//	restore to N  ─ Init: Recover each writer State knows: open txns discarded,
//	                prepared ones State does not list kept as orphans;
//	                then Commit(N) again (the runtime calls it after a restore)
//
// An orphan (prepared after the restored checkpoint) is aborted only once
// a newer checkpoint completes: it may belong to a checkpoint that
// completed without this node hearing of it, which a later rollback
// restores and commits. Under the guarantees other than exactly-once
// there are no checkpoints: the sink's Flush (before each commit of
// state) prepares and commits at once, or calls the Transactions' own
// Flush.
//
// sdk/sdktest drives either through barriers, completion, crash and
// restore (Harness.Checkpoint, Complete, Crash, Restore); the examples do.
package connect
