// Package objfile is a sink writing rolling JSON-lines or Parquet files to
// an objstore.Store: S3-compatible storage (objstore/s3store) or a
// directory (objstore/fsstore), as objstore/storeurl opens them.
//
// A Parquet sink (FormatParquet) takes records whose values are JSON
// objects and writes the top-level fields its Columns name, typed (string,
// int64, double, bool, timestamp in milliseconds), Snappy-compressed; a
// record that is not such an object, or lacks a required column, is
// refused as a bad record (dead-lettered) before anything of it is
// written. Its final keys end in ".parquet" instead of ".jsonl"; the rest
// below holds for both formats.
//
// Each record's value is one line (the value and '\n'; it is not checked
// to be JSON unless the sink partitions by a field). Lines go to the file
// of the record's partition: none, the hour of its event time in UTC
// ("dt=2026-12-07/hr=11/"), or a top-level JSON field ("country=fr/").
// A file rolls once it holds RollBytes bytes or RollRecords records.
//
// Under exactly-once the sink is a connect.Sink (two-phase commit). The
// records since the last checkpoint barrier are a transaction, named
// "t<the time it began>". A file is put as a pending object as soon as it
// rolls (memory holds only the files being filled), the rest at the
// barrier (PreCommit):
//
//	<Prefix>_pending/<writer>/<txn>-<n, 6 digits>
//
// and last a marker, <Prefix>_pending/<writer>/<checkpoint, 20 digits>.txn,
// holding the transaction's name and its files' final keys, which State
// keeps too. When the checkpoint completes (Commit) each pending object is
// copied to its final key,
//
//	<Prefix><partition><writer>-<checkpoint>-<n>.jsonl
//
// and deleted, then the marker. A file under a final key is therefore
// whole and belongs to a complete checkpoint; every record is in exactly
// one final file. Commit is idempotent: after a crash it finds the pending
// object (and puts the same bytes under the same name again) or only the
// final one. On restore the writer deletes the files of a transaction no
// marker names (open when it stopped: its records come again); prepared
// transactions the restored State does not list are deleted once a newer
// checkpoint completes (connect.TwoPhase explains why not sooner). writer
// is connect.WriterName: the operator and the instance's first key group.
//
// Under the other guarantees each Flush puts the files of the lines since
// the previous Flush under final keys named by the time
// ("<writer>-f<unix ns>-<n>.jsonl"): a record is written at least once.
//
// Readers list Prefix and skip keys starting with "_pending/" (Hive-style
// readers skip names starting with '_').
//
// Under the other guarantees files wait in memory for the Flush.
//
// NewSource is a bounded source reading the files under a prefix back,
// in key order (a backfill).
//
// Not done: compression of JSON lines; a source following a prefix as new
// files appear.
package objfile
