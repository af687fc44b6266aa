package persistence

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/rangekey"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/sstable/block"
)

// Restoring key groups from a checkpoint without rewriting all of them.
//
// Most of a checkpoint's data is in its bottom level (L6), in table files
// whose keys all have sequence number 0 (Pebble zeroes them there). Such a
// file that lies within the key groups restored is ingested as it is: a
// hard link, not a copy. What the levels above (and the log) hold over the
// same keys (newer values, deletions, range deletions) and every key not in
// such a file is written to one more table, the delta, ingested after the
// linked files and so shadowing them. Files that cross the bounds of the
// restored groups (a restore onto a different parallelism) are never
// linked: their keys in the groups go to the delta, which then holds
// everything, as a plain rewrite does.

// linkable returns the checkpoint's table files, by path, that can be
// ingested whole into the groups' span: in L6, physical, within span, every
// key at sequence number 0 and no range deletions, range keys or values in
// blob files. Their key ranges do not overlap (L6), in key order.
func (s *Snapshot) linkable(span Span) ([]linkedTable, error) {
	levels, err := s.pdb.SSTables(pebble.WithProperties(), pebble.WithKeyRangeFilter(span.Start, span.End))
	if err != nil {
		return nil, err
	}
	if len(levels) == 0 {
		return nil, nil
	}
	var out []linkedTable
	for _, t := range levels[len(levels)-1] {
		p := t.Properties
		if t.Virtual || t.BackingType != pebble.BackingTypeLocal || p == nil || t.LargestSeqNum != 0 ||
			p.NumRangeDeletions != 0 || p.NumRangeKeySets+p.NumRangeKeyUnsets+p.NumRangeKeyDels != 0 || p.NumValuesInBlobFiles != 0 ||
			bytes.Compare(t.Smallest.UserKey, span.Start) < 0 || bytes.Compare(t.Largest.UserKey, span.End) >= 0 {
			continue
		}
		path := filepath.Join(s.dir, fmt.Sprintf("%s.sst", t.BackingSSTNum))
		if _, err := os.Stat(path); err != nil {
			continue
		}
		out = append(out, linkedTable{path: path, lo: t.Smallest.UserKey, hi: t.Largest.UserKey})
	}
	slices.SortFunc(out, func(a, b linkedTable) int { return bytes.Compare(a.lo, b.lo) })
	return out, nil
}

// linkedTable is a checkpoint table file ingested whole, holding keys
// [lo, hi] (inclusive).
type linkedTable struct {
	path   string
	lo, hi []byte
}

// covering returns the table among ts (sorted, disjoint) whose key range
// holds k, or nil; from is where to start looking (keys come in order) and
// is advanced.
func covering(ts []linkedTable, from *int, k []byte) *linkedTable {
	for *from < len(ts) && bytes.Compare(ts[*from].hi, k) < 0 {
		*from++
	}
	if *from < len(ts) && bytes.Compare(ts[*from].lo, k) <= 0 {
		return &ts[*from]
	}
	return nil
}

// errUnsupportedKey is returned for a checkpoint key this package never
// writes (merge operands, range keys).
var errUnsupportedKey = errors.New("persistence: unsupported key kind in checkpoint")

// writeDelta writes into a table file at path, in dst's table format, what
// must be ingested over the linked tables (none: everything) for the span
// to read as src does: src's visible keys in span except those the linked
// tables hold as they are, and, over the linked tables' key ranges, src's
// deletions and range deletions. It returns the keys src holds in span and
// their bytes, and how many entries it wrote.
func writeDelta(path string, dst, src *pebble.DB, span Span, linked []linkedTable) (keys int, size int64, written int, err error) {
	file, err := os.Create(path)
	if err != nil {
		return 0, 0, 0, err
	}
	w := sstable.NewWriter(newBufferedWritable(file), sstable.WriterOptions{TableFormat: dst.TableFormat()})
	overlapsLinked := func(lo, hi []byte) bool { // [lo, hi) against the linked tables
		for _, t := range linked {
			if bytes.Compare(t.lo, hi) < 0 && bytes.Compare(lo, t.hi) <= 0 {
				return true
			}
		}
		return false
	}
	var lastDelEnd []byte
	at := 0
	err = src.ScanInternal(context.Background(), block.CategoryUnknown, span.Start, span.End,
		func(k *pebble.InternalKey, v pebble.LazyValue, lvl pebble.IteratorLevel) error {
			in := covering(linked, &at, k.UserKey)
			switch k.Kind() {
			case pebble.InternalKeyKindSet, pebble.InternalKeyKindSetWithDelete:
				val, _, err := v.Value(nil)
				if err != nil {
					return err
				}
				keys++
				size += int64(len(k.UserKey) + len(val))
				// Sequence number 0 is unique to a user key, and L6 tables
				// do not overlap: this is the linked table's own entry.
				if in != nil && k.SeqNum() == 0 && lvl.Kind == pebble.IteratorLevelLSM && lvl.Level == 6 {
					return nil
				}
				written++
				return w.Set(k.UserKey, val)
			case pebble.InternalKeyKindDelete, pebble.InternalKeyKindSingleDelete, pebble.InternalKeyKindDeleteSized:
				if in == nil {
					return nil // nothing under it after the excise
				}
				written++
				return w.Delete(k.UserKey)
			default:
				return fmt.Errorf("%w: %s", errUnsupportedKey, k.Kind())
			}
		},
		func(start, end []byte, _ pebble.SeqNum) error {
			if !overlapsLinked(start, end) || (lastDelEnd != nil && bytes.Compare(start, lastDelEnd) < 0) {
				return nil
			}
			lastDelEnd = append(lastDelEnd[:0], end...)
			written++
			return w.DeleteRange(start, end)
		},
		func([]byte, []byte, []rangekey.Key) error { return errUnsupportedKey },
		nil, nil)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return keys, size, written, err
}
