package persistence

import "fmt"

// KV is one key and value of the database, as moved between nodes.
type KV struct {
	Key   []byte
	Value []byte
}

// ExportGroups calls fn with the data (state and timers) of operator op in
// key groups [first, end), in key order, in chunks of about maxBytes. The
// slices passed to fn are fresh copies that fn may keep.
func (db *DB) ExportGroups(op string, first, end, maxBytes int, fn func([]KV) error) error {
	lo, hi := groupBounds(operatorPrefix(op), first, end)
	var chunk []KV
	size := 0
	err := db.iterate(lo, hi, func(k, v []byte) error {
		chunk = append(chunk, KV{Key: append([]byte(nil), k...), Value: append([]byte(nil), v...)})
		if size += len(k) + len(v); size >= maxBytes {
			err := fn(chunk)
			chunk, size = nil, 0
			return err
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("persistence: export %q groups [%d,%d): %w", op, first, end, err)
	}
	if len(chunk) > 0 {
		return fn(chunk)
	}
	return nil
}

// ImportGroups durably writes kvs, which must be keys of operator op in key
// groups [first, end). With replace set it first deletes everything the
// database held in those key groups, so that stale data cannot survive.
func (db *DB) ImportGroups(op string, first, end int, replace bool, kvs []KV) error {
	p := operatorPrefix(op)
	lo, hi := groupBounds(p, first, end)
	b := db.pdb.NewBatch()
	defer b.Close()
	if replace {
		if err := b.DeleteRange(lo, hi, nil); err != nil {
			return fmt.Errorf("persistence: import %q: %w", op, err)
		}
	}
	for _, kv := range kvs {
		if string(kv.Key) < string(lo) || string(kv.Key) >= string(hi) {
			return fmt.Errorf("persistence: import %q groups [%d,%d): key %q is outside them", op, first, end, kv.Key)
		}
		if err := b.Set(kv.Key, kv.Value, nil); err != nil {
			return fmt.Errorf("persistence: import %q: %w", op, err)
		}
	}
	if err := db.commit(b, true); err != nil {
		return fmt.Errorf("persistence: import %q groups [%d,%d): %w", op, first, end, err)
	}
	return nil
}

// DeleteGroups durably deletes operator op's data in key groups [first, end).
func (db *DB) DeleteGroups(op string, first, end int) error {
	lo, hi := groupBounds(operatorPrefix(op), first, end)
	b := db.pdb.NewBatch()
	defer b.Close()
	if err := b.DeleteRange(lo, hi, nil); err != nil {
		return fmt.Errorf("persistence: delete %q groups [%d,%d): %w", op, first, end, err)
	}
	if err := db.commit(b, true); err != nil {
		return fmt.Errorf("persistence: delete %q groups [%d,%d): %w", op, first, end, err)
	}
	return nil
}

// EstimateSize returns an estimate of the bytes operator op's key groups
// [first, end) take on disk (data not yet flushed from memory counts as 0).
func (db *DB) EstimateSize(op string, first, end int) (uint64, error) {
	lo, hi := groupBounds(operatorPrefix(op), first, end)
	db.mu.RLock()
	defer db.mu.RUnlock()
	if db.closed {
		return 0, ErrClosed
	}
	n, err := db.pdb.EstimateDiskUsage(lo, hi)
	if err != nil {
		return 0, fmt.Errorf("persistence: estimate size of %q: %w", op, err)
	}
	return n, nil
}
