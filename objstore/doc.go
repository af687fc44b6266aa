// Package objstore is the storage seam of distributed checkpoints: a flat
// namespace of immutable objects named by slash-separated keys, kept in a
// directory (shared mount or local disk) or in S3-compatible storage.
//
// A checkpoint uploads each Pebble SST file once, under a content- or
// sequence-derived key, then a small metadata object naming them; a reader
// lists the metadata objects, reads the newest and fetches the SSTs it names.
// [Store] offers exactly that: Put, Get, Stat, List and Delete. Objects are
// written whole and atomically (a reader sees the old object, the new one or
// none, never a part), so a checkpoint is committed by the Put of its
// metadata object.
//
// Backends live in their own subpackages: fsstore (a directory) and s3store
// (minio-go against any S3 API). storeurl turns the user-facing setting
// ("/var/lib/sluice/ckpt", "file:///mnt/ckpt", "s3://bucket/prefix") into
// an open Store, and objstoretest is the conformance suite every backend
// passes.
//
//	st, err := storeurl.Open(ctx, "s3://ckpt-bucket/job-7")
//	f, _ := os.Open(sstPath)
//	fi, _ := f.Stat()
//	err = st.Put(ctx, "ckpt/000042/000123.sst", f, fi.Size())
//	f.Close() // the caller owns f
//
// Keys are validated the same way by every backend ([ValidateKey]), so a
// job that works on a directory works on S3 and back.
package objstore
