package persistence

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/cockroachdb/pebble/v2"
)

// Errors returned by this package.
var (
	// ErrClosed is returned by operations on a closed DB.
	ErrClosed = errors.New("persistence: closed")
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
	pdb, err := pebble.Open(dir, &pebble.Options{
		Cache:  cache,
		Logger: pebbleLogger{opts.Logger},
		// The newest format: restoring checkpoints excises key ranges
		// (see checkpoint.go).
		FormatMajorVersion: pebble.FormatNewest,
	})
	if err != nil {
		return nil, fmt.Errorf("persistence: open %s: %w", dir, err)
	}
	return &DB{pdb: pdb, opts: opts}, nil
}

// Close flushes and closes the database. It is safe to call twice.
func (db *DB) Close() error {
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

// commit applies b, waiting for the WAL sync when sync is true.
func (db *DB) commit(b *pebble.Batch, sync bool) error {
	db.mu.RLock()
	defer db.mu.RUnlock()
	if db.closed {
		return ErrClosed
	}
	opt := pebble.NoSync
	if sync {
		opt = pebble.Sync
	}
	return b.Commit(opt)
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
func (pebbleLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf("pebble: "+format, args...))
}
