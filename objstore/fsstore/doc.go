// Package fsstore is the directory backend of objstore: each object is a
// file under a root directory, at the path its key names ("ckpt/1/a.sst"
// is ROOT/ckpt/1/a.sst), so the tree can be read with ordinary tools.
//
// Put writes a temporary file next to the target (named with
// objstore.ReservedPrefix, never listed), fsyncs it, renames it over the
// target and fsyncs the directory, creating and fsyncing missing parent
// directories on the way: after Put returns the object survives a crash,
// and a reader opens either the old file or the new one. This needs only
// POSIX rename and fsync, so the root may be a shared mount (NFS, CephFS,
// a cloud file share) written by several nodes; keys written concurrently
// by two nodes end as one of the two objects. Delete removes the file and
// any parent directories it leaves empty (not fsynced: a delete lost in a
// crash is repeated by the next garbage collection).
//
// A Put interrupted by a crash leaves its temporary file behind; it is
// never listed or read, and takes space until removed by hand.
package fsstore
