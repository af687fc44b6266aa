package objstore

import (
	"context"
	"io"
	"time"
)

// Store is a namespace of immutable objects. Every method blocks until the
// operation is done or ctx ends, and is safe for concurrent use. A Store
// retries transient transport errors a bounded number of times on its own
// (see each backend's Config); an error it returns is final for that call,
// and the caller decides whether to try again later (for a checkpoint: the
// next checkpoint). Errors wrap the cause and name the operation and key;
// branch on them with errors.Is ([ErrNotFound], [ErrInvalidKey],
// [ErrSizeMismatch], context.Canceled, context.DeadlineExceeded).
//
// A key is also a directory on the directory backend, so portable callers
// never use a key that is a leading path of another key ("a" and "a/b").
type Store interface {
	// Put stores exactly size bytes read from r under key, replacing any
	// object there. It returns once the object is durable (fsynced, or
	// acknowledged by the S3 service). Readers of key see the previous
	// object or the new one, never a partial one; if Put fails, the
	// previous object is untouched. If r yields fewer or more than size
	// bytes, Put fails with ErrSizeMismatch. Put streams r: large objects
	// are not held in memory. Put reads r only during the call and never
	// closes it: the caller owns r. If r is an io.ReaderAt and io.Seeker
	// (an *os.File, a *bytes.Reader), it is read from its current offset,
	// possibly in parallel and more than once (for retries).
	Put(ctx context.Context, key string, r io.Reader, size int64) error

	// Get opens the object under key for reading. It returns an error
	// wrapping ErrNotFound if there is none. The caller must Close the
	// reader; reads after ctx ends fail. The reader yields the object as
	// it was when Get was called, even if it is replaced meanwhile.
	Get(ctx context.Context, key string) (io.ReadCloser, error)

	// Stat returns the size and modification time of the object under
	// key, or an error wrapping ErrNotFound.
	Stat(ctx context.Context, key string) (ObjectInfo, error)

	// List returns every object whose key starts with prefix (a plain
	// string prefix: "ckpt/00" matches "ckpt/0001/a.sst"), sorted by key
	// in byte order. An empty prefix lists everything; no match is an empty
	// slice, not an error. The whole listing is returned at once (backends
	// page through large ones); objects put or deleted during the call may
	// or may not be in it. Objects being written are never listed.
	List(ctx context.Context, prefix string) ([]ObjectInfo, error)

	// Delete removes the object under key. Deleting a missing key is not
	// an error.
	Delete(ctx context.Context, key string) error
}

// Linker is implemented by a Store that can take a local file as an
// object without copying it (the directory backend, on the file system of
// the file: a hard link). Callers try it for files that never change
// again (a database's table files) and fall back to Put when it fails.
type Linker interface {
	// PutLink stores the file at path under key, as Put would store its
	// bytes, by linking it. The file must not change afterwards. It
	// returns an error (and stores nothing) when it cannot link, for
	// instance across file systems.
	PutLink(ctx context.Context, key, path string) error
}

// ObjectInfo describes one stored object.
type ObjectInfo struct {
	Key     string
	Size    int64     // bytes
	ModTime time.Time // when it was last put, by the store's clock
}
