package persistence

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// Errors returned by this package.
var (
	// ErrClosed is returned by operations on a closed DB.
	ErrClosed = errors.New("persistence: closed")
	// ErrFailed is returned by every commit after one failed inside Pebble
	// (a full disk, an I/O error): Pebble's commit pipeline cannot be used
	// again in this process, so the node must stop (see DB.Failed).
	ErrFailed = errors.New("persistence: state database failed")
)

// Options configure a DB. The zero value is usable.
type Options struct {
	// CacheBytes is Pebble's block cache size; 0 means 64 MiB.
	CacheBytes int64
	// StoreCacheEntries bounds each Store's read cache; 0 means 131072.
	StoreCacheEntries int
	// Logger receives Pebble's error messages; nil means slog.Default().
	Logger *slog.Logger
}

// DB is a node's state database: one Pebble instance under a directory.
// It is safe for concurrent use; each operator instance uses its own Store.
type DB struct {
	pdb  *pebble.DB
	opts Options

	mu     sync.RWMutex // guards closed against Close while batches commit
	closed bool

	failed atomic.Pointer[error] // set once, by the first failed commit
	bg     backgroundErrors
}

// backgroundErrors keeps the last error of Pebble's background work
// (flushes, compactions: retried by Pebble) and logs at most one a second.
type backgroundErrors struct {
	log *slog.Logger

	mu      sync.Mutex
	last    error
	at      time.Time
	logged  time.Time
	dropped int
}

// note records err and logs it unless one was logged less than a second ago.
func (b *backgroundErrors) note(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	b.last, b.at = err, now
	if now.Sub(b.logged) < time.Second {
		b.dropped++
		return
	}
	b.log.Error("pebble: background error (retried)", "err", err.Error(), "more_since_last_log", b.dropped)
	b.logged, b.dropped = now, 0
}

// Open opens (creating if needed) the database in dir.
func Open(dir string, opts Options) (*DB, error) {
	if opts.CacheBytes == 0 {
		opts.CacheBytes = 64 << 20
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.StoreCacheEntries == 0 {
		opts.StoreCacheEntries = 1 << 17
	}
	cache := pebble.NewCache(opts.CacheBytes)
	defer cache.Unref()
	db := &DB{opts: opts}
	db.bg.log = opts.Logger
	pdb, err := pebble.Open(dir, &pebble.Options{
		Cache:         cache,
		Logger:        pebbleLogger{opts.Logger},
		EventListener: &pebble.EventListener{BackgroundError: db.bg.note},
		// The newest format: restoring checkpoints excises key ranges
		// (see checkpoint.go).
		FormatMajorVersion: pebble.FormatNewest,
	})
	if err != nil {
		return nil, fmt.Errorf("persistence: open %s: %w", dir, err)
	}
	db.pdb = pdb
	return db, nil
}

// Failed returns the error (wrapping ErrFailed and the cause, e.g.
// syscall.ENOSPC) of the commit that broke the database, or nil. Once
// failed, a DB stays failed: Pebble's commit pipeline is left locked by
// the failure, so later commits return the error at once instead of
// blocking for ever, and the process must exit to recover (restarting
// replays the WAL up to the failure).
func (db *DB) Failed() error {
	if p := db.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// LastBackgroundError returns the last error of Pebble's background work
// (flushes and compactions, which Pebble retries) and when it happened.
func (db *DB) LastBackgroundError() (error, time.Time) {
	db.bg.mu.Lock()
	defer db.bg.mu.Unlock()
	return db.bg.last, db.bg.at
}

// fail records the failure a commit panicked with (Pebble panics on a
// WAL write error and, through pebbleLogger.Fatalf, on a failed memtable
// rotation) and returns it.
func (db *DB) fail(r any) error {
	cause, ok := r.(error)
	if !ok {
		cause = fmt.Errorf("%v", r)
	}
	err := fmt.Errorf("%w: commit: %w", ErrFailed, cause)
	if db.failed.CompareAndSwap(nil, &err) {
		db.opts.Logger.Error("persistence: a commit failed; the state database accepts no more writes in this process", "err", cause.Error())
	}
	return db.Failed()
}

// Close flushes and closes the database. It is safe to call twice. A failed
// DB (see Failed) is not closed: commits stuck in Pebble hold it; Close
// returns the failure at once and the process must exit.
func (db *DB) Close() error {
	if err := db.Failed(); err != nil {
		return fmt.Errorf("persistence: close: %w", err)
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return nil
	}
	db.closed = true
	if err := db.pdb.Close(); err != nil {
		return fmt.Errorf("persistence: close: %w", err)
	}
	return nil
}

// commit applies b, waiting for the WAL sync when sync is true. A commit
// that fails inside Pebble fails the DB (see Failed).
func (db *DB) commit(b *pebble.Batch, sync bool) (err error) {
	db.mu.RLock()
	defer db.mu.RUnlock()
	if db.closed {
		return ErrClosed
	}
	if err := db.Failed(); err != nil {
		return err
	}
	opt := pebble.NoSync
	if sync {
		opt = pebble.Sync
	}
	defer func() {
		if r := recover(); r != nil {
			err = db.fail(r)
		}
	}()
	return b.Commit(opt) // an error here is a refusal before the pipeline, not a failure
}

// get reads one key; found is false when it is absent. The result is a copy.
func (db *DB) get(key []byte) (val []byte, found bool, err error) {
	db.mu.RLock()
	defer db.mu.RUnlock()
	if db.closed {
		return nil, false, ErrClosed
	}
	v, closer, err := db.pdb.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	val = make([]byte, len(v)) // non-nil even when empty: nil means absent
	copy(val, v)
	return val, true, closer.Close()
}

// iterate calls fn for every key in [lo, hi) in order.
func (db *DB) iterate(lo, hi []byte, fn func(k, v []byte) error) error {
	db.mu.RLock()
	defer db.mu.RUnlock()
	if db.closed {
		return ErrClosed
	}
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		if err := fn(it.Key(), it.Value()); err != nil {
			_ = it.Close()
			return err
		}
	}
	return it.Close()
}

// GetMeta reads node metadata stored under name.
func (db *DB) GetMeta(name string) ([]byte, bool, error) {
	v, ok, err := db.get(NodeKey(name))
	if err != nil {
		return nil, false, fmt.Errorf("persistence: get meta %q: %w", name, err)
	}
	return v, ok, nil
}

// SetMeta durably stores node metadata under name.
func (db *DB) SetMeta(name string, value []byte) error {
	b := db.pdb.NewBatch()
	defer b.Close()
	if err := b.Set(NodeKey(name), value, nil); err != nil {
		return fmt.Errorf("persistence: set meta %q: %w", name, err)
	}
	if err := db.commit(b, true); err != nil {
		return fmt.Errorf("persistence: set meta %q: %w", name, err)
	}
	return nil
}

// PurgeOperator deletes all state and timers of operator op.
func (db *DB) PurgeOperator(op string) error {
	lo, hi := operatorBounds(operatorPrefix(op))
	b := db.pdb.NewBatch()
	defer b.Close()
	if err := b.DeleteRange(lo, hi, nil); err != nil {
		return fmt.Errorf("persistence: purge %q: %w", op, err)
	}
	if err := db.commit(b, true); err != nil {
		return fmt.Errorf("persistence: purge %q: %w", op, err)
	}
	return nil
}

// pebbleLogger drops Pebble's informational messages and logs its errors.
type pebbleLogger struct{ l *slog.Logger }

func (pebbleLogger) Infof(string, ...any) {}
func (p pebbleLogger) Errorf(format string, args ...any) {
	p.l.Error("pebble: " + fmt.Sprintf(format, args...))
}

// Fatalf panics with a *pebbleFatal wrapping the first error among args,
// so that DB.commit, which recovers it, keeps the cause (ENOSPC).
func (pebbleLogger) Fatalf(format string, args ...any) {
	f := &pebbleFatal{msg: fmt.Sprintf(format, args...)}
	if !strings.HasPrefix(f.msg, "pebble: ") {
		f.msg = "pebble: " + f.msg
	}
	for _, a := range args {
		if err, ok := a.(error); ok {
			f.cause = err
			break
		}
	}
	panic(f)
}

// pebbleFatal is a fatal error reported by Pebble.
type pebbleFatal struct {
	msg   string
	cause error
}

func (f *pebbleFatal) Error() string { return f.msg }
func (f *pebbleFatal) Unwrap() error { return f.cause }
