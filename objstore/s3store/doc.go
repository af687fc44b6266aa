// Package s3store is the S3 backend of objstore, on minio-go: AWS S3 or
// any S3-compatible service (MinIO, Ceph RGW, SeaweedFS, R2, ...).
//
// An object under key K lives in Config.Bucket at Config.Prefix+K. A Put
// of up to Config.PartSize bytes is one PUT request; a larger one is a
// multipart upload in parts of PartSize (parts are read at their offsets,
// in parallel, from an *os.File or other io.ReaderAt; a plain io.Reader is
// buffered one part at a time), so an object is never held in memory
// whole. Both are atomic in S3: the object appears when the request or
// the CompleteMultipartUpload returns.
//
// Failures are bounded in time without relying on the caller's ctx:
// connecting, TLS and every read or write on a connection that makes no
// progress for Config.IOTimeout fail, and a request is tried at most
// Config.MaxRetries times with backoff (one whose body cannot be re-read,
// once). With the defaults a call to a server that refuses connections
// fails within about 1.5 s, and one to a hung server within about
// 3 × 30 s; a slow transfer that keeps moving is never cut off. Tests
// measure both against SeaweedFS with shorter settings.
package s3store
