package persistence

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/record"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/wal"
)

// Checkpoints of the database, for package checkpoint: a consistent copy of
// key ranges at one moment, taken without stopping writers, from which
// operators' key groups are restored later, here or on another node.
//
// A checkpoint directory is a Pebble database of its own: immutable table
// files hard-linked from the live database (and so shared between
// successive checkpoints: only new ones need uploading), plus a small
// MANIFEST, OPTIONS and write-ahead log.

// Span is a key range [Start, End).
type Span struct{ Start, End []byte }

// GroupSpan returns the keys of operator op in key groups [first, end):
// state, timers and runtime bookkeeping.
func GroupSpan(op string, first, end int) Span {
	lo, hi := groupBounds(operatorPrefix(op), first, end)
	return Span{lo, hi}
}

// CheckpointFile is one file of a checkpoint directory.
type CheckpointFile struct {
	// Name is the file's name in the directory.
	Name string
	Size int64
	// Shared marks an immutable table or blob file: the same name in two
	// checkpoints of one database is the same content.
	Shared bool
}

// Checkpoint writes a copy of the database restricted to spans into dir,
// which must not exist. The memtable is flushed first, so the copy is made
// of table files (hard links) and a short log. It returns the files.
func (db *DB) Checkpoint(dir string, spans []Span) ([]CheckpointFile, error) {
	db.mu.RLock()
	defer db.mu.RUnlock()
	if db.closed {
		return nil, ErrClosed
	}
	if err := db.pdb.Flush(); err != nil {
		return nil, fmt.Errorf("persistence: checkpoint: flush: %w", err)
	}
	cs := make([]pebble.CheckpointSpan, len(spans))
	for i, s := range spans {
		cs[i] = pebble.CheckpointSpan{Start: s.Start, End: s.End}
	}
	opts := []pebble.CheckpointOption{pebble.WithFlushedWAL()}
	if len(spans) > 0 {
		opts = append(opts, pebble.WithRestrictToSpans(cs))
	}
	if err := db.pdb.Checkpoint(dir, opts...); err != nil {
		return nil, fmt.Errorf("persistence: checkpoint into %s: %w", dir, err)
	}
	if err := trimLogs(dir); err != nil {
		return nil, fmt.Errorf("persistence: checkpoint into %s: %w", dir, err)
	}
	return CheckpointFiles(dir)
}

// trimLogs cuts each write-ahead log in a checkpoint directory after its
// last valid record. Pebble reuses log files, and a checkpoint copies a log
// whole, stale bytes of its previous use included (megabytes, uploaded
// with every checkpoint); the log reader stops at them anyway.
func trimLogs(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		num, _, ok := wal.ParseLogFilename(e.Name())
		if !ok {
			continue
		}
		path := filepath.Join(dir, e.Name())
		end, err := validLogLength(path, uint64(num))
		if err != nil {
			return fmt.Errorf("read log %s: %w", e.Name(), err)
		}
		if err := os.Truncate(path, end); err != nil {
			return err
		}
	}
	return nil
}

// validLogLength returns the offset after the last valid record of the log
// file at path with number num.
func validLogLength(path string, num uint64) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	// record.NewReader takes the log number as an internal Pebble type;
	// reflection converts ours to it.
	newReader := reflect.ValueOf(record.NewReader)
	out := newReader.Call([]reflect.Value{reflect.ValueOf(io.Reader(f)), reflect.ValueOf(num).Convert(newReader.Type().In(1))})
	r := out[0].Interface().(*record.Reader)
	var end int64
	for {
		rr, err := r.Next()
		if err != nil {
			return end, nil // io.EOF, or the stale tail of a reused file
		}
		if _, err := io.Copy(io.Discard, rr); err != nil {
			return end, nil
		}
		end = r.Offset()
	}
}

// CheckpointFiles lists the files of a checkpoint directory, sorted by name.
func CheckpointFiles(dir string) ([]CheckpointFile, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("persistence: list checkpoint %s: %w", dir, err)
	}
	var out []CheckpointFile
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return nil, fmt.Errorf("persistence: list checkpoint %s: %w", dir, err)
		}
		name := e.Name()
		out = append(out, CheckpointFile{Name: name, Size: info.Size(),
			Shared: strings.HasSuffix(name, ".sst") || strings.HasSuffix(name, ".blob")})
	}
	slices.SortFunc(out, func(a, b CheckpointFile) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Snapshot is a checkpoint directory opened read-only, to restore key
// groups from.
type Snapshot struct {
	pdb *pebble.DB
}

// OpenCheckpoint opens the checkpoint in dir read-only.
func OpenCheckpoint(dir string) (*Snapshot, error) {
	pdb, err := pebble.Open(dir, &pebble.Options{ReadOnly: true, Logger: pebbleLogger{slog.Default()}})
	if err != nil {
		return nil, fmt.Errorf("persistence: open checkpoint %s: %w", dir, err)
	}
	return &Snapshot{pdb: pdb}, nil
}

// Close closes the snapshot.
func (s *Snapshot) Close() error { return s.pdb.Close() }

// RestoreGroups replaces, atomically, what the database holds in operator
// op's key groups [first, end) with what src held there (nothing, if src
// holds nothing there). The groups must lie within the spans src was
// checkpointed with: table files overlapping them hold other keys too, at
// whatever version they had. tmpDir holds the table file it builds on the
// way. It returns the number of keys and bytes restored.
func (db *DB) RestoreGroups(src *Snapshot, op string, first, end int, tmpDir string) (keys int, bytes int64, err error) {
	span := GroupSpan(op, first, end)
	if err := os.MkdirAll(tmpDir, 0o755); err != nil {
		return 0, 0, fmt.Errorf("persistence: restore %q: %w", op, err)
	}
	f, err := os.CreateTemp(tmpDir, "restore-*.sst")
	if err != nil {
		return 0, 0, fmt.Errorf("persistence: restore %q: %w", op, err)
	}
	path := f.Name()
	_ = f.Close()
	defer os.Remove(path)

	db.mu.RLock()
	defer db.mu.RUnlock()
	if db.closed {
		return 0, 0, ErrClosed
	}
	keys, bytes, err = writeTable(path, db.pdb, src.pdb, span)
	if err != nil {
		return 0, 0, fmt.Errorf("persistence: restore %q groups [%d,%d): %w", op, first, end, err)
	}
	excise := pebble.KeyRange{Start: span.Start, End: span.End}
	if keys == 0 {
		err = db.pdb.Excise(context.Background(), excise)
	} else {
		_, err = db.pdb.IngestAndExcise(context.Background(), []string{path}, nil, nil, excise)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("persistence: restore %q groups [%d,%d): %w", op, first, end, err)
	}
	return keys, bytes, nil
}

// writeTable writes src's keys in span into a table file at path in dst's
// table format, and returns how many it wrote.
func writeTable(path string, dst, src *pebble.DB, span Span) (keys int, bytes int64, err error) {
	it, err := src.NewIter(&pebble.IterOptions{LowerBound: span.Start, UpperBound: span.End})
	if err != nil {
		return 0, 0, err
	}
	defer func() { err = errors.Join(err, it.Close()) }()
	file, err := vfs.Default.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return 0, 0, err
	}
	w := sstable.NewWriter(objstorageprovider.NewFileWritable(file), sstable.WriterOptions{TableFormat: dst.TableFormat()})
	for ok := it.First(); ok; ok = it.Next() {
		if err := w.Set(it.Key(), it.Value()); err != nil {
			_ = w.Close()
			return 0, 0, err
		}
		keys++
		bytes += int64(len(it.Key()) + len(it.Value()))
	}
	if err := w.Close(); err != nil {
		return 0, 0, err
	}
	return keys, bytes, nil
}

// CheckpointDir is where, under a node's data directory, checkpoint
// directories live.
func CheckpointDir(dataDir string) string { return filepath.Join(dataDir, "checkpoints") }
