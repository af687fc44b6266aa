// Package checkpoint keeps Sluice's distributed checkpoints in object
// storage (package objstore: a directory or S3-compatible storage) and
// describes them.
//
// A checkpoint is a consistent snapshot of every operator's state across
// the cluster, taken without stopping the pipeline by aligned barriers (the
// runtime's side is in package actors): each node copies its database,
// restricted to the key groups of its instances (persistence.Checkpoint),
// and uploads the copy; when every node has, the coordinator writes the
// checkpoint's metadata, which is what makes it complete.
//
// # Layout in the store
//
//	sst/<db>/<file>                 immutable table and blob files of database <db>: uploaded
//	                                once, referenced by every checkpoint that contains them
//	chk/<id>/nodes/<node>/<file>    a node's other files (MANIFEST, OPTIONS, log) for checkpoint <id>
//	chk/<id>/meta.json              the metadata; written last, so its presence means complete
//	generation.json                 the newest rollback generation
//	branch.json                     the checkpoint the cluster was started from (StartFrom)
//
// <id> is the checkpoint id as 20 decimal digits, so that keys sort by id.
// A database <db> is a node's data directory, named by the identity it was
// given when created, so a node that lost its disk uploads afresh.
//
// # Incremental uploads
//
// Table files are immutable and their names are never reused within one
// database, so a file already in the store is referenced, not sent again:
// each checkpoint uploads the files flushed or compacted since the
// previous one, plus a few small files. Meta.Uploaded is what a
// checkpoint sent; Meta.Size is the size of everything it references.
//
// # Retention
//
// Retain keeps the newest K complete checkpoints and every savepoint (a
// checkpoint taken on request, Meta.Savepoint), and deletes the others'
// files, the table files no kept checkpoint references, and what failed
// checkpoints left behind.
//
// # Starting from a named checkpoint
//
// StartFrom records, in branch.json, that the cluster starts from an older
// checkpoint: the newer ones belong to the abandoned run, and Latest skips
// them from then on.
package checkpoint
