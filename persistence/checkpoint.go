package persistence

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/record"
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

// StartFlush starts writing the memtable to a table file in the
// background: a Checkpoint soon after then has only what was written
// meanwhile to flush before it can copy.
func (db *DB) StartFlush() error {
	db.mu.RLock()
	defer db.mu.RUnlock()
	if db.closed {
		return ErrClosed
	}
	if err := db.Failed(); err != nil {
		return err // its commit pipeline is stuck: a flush would wait for ever
	}
	if _, err := db.pdb.AsyncFlush(); err != nil {
		return fmt.Errorf("persistence: start a flush: %w", err)
	}
	return nil
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
	dir string
}

// OpenCheckpoint opens the checkpoint in dir read-only.
func OpenCheckpoint(dir string) (*Snapshot, error) {
	pdb, err := pebble.Open(dir, &pebble.Options{ReadOnly: true, FS: windowFS{vfs.Default}, Logger: pebbleLogger{slog.Default()}})
	if err != nil {
		return nil, fmt.Errorf("persistence: open checkpoint %s: %w", dir, err)
	}
	return &Snapshot{pdb: pdb, dir: dir}, nil
}

// Close closes the snapshot.
func (s *Snapshot) Close() error { return s.pdb.Close() }

// RestoreGroups replaces what the database holds in operator op's key
// groups [first, end) with what src held there (nothing, if src holds
// nothing there). The groups must lie within the spans src was
// checkpointed with: table files overlapping them hold other keys too, at
// whatever version they had. tmpDir holds the table files it links and
// builds on the way. It returns the number of keys and bytes restored.
//
// Table files of src that lie within the groups are ingested whole
// (restore.go), in a first step that also deletes what the groups held;
// the rest of src's data there is written to a table ingested in a second.
// If the second step fails, the groups hold part of src's data: the caller
// restores them again before using them.
func (db *DB) RestoreGroups(src *Snapshot, op string, first, end int, tmpDir string) (keys int, bytes int64, err error) {
	st, err := db.restoreGroups(src, op, first, end, tmpDir)
	if err != nil {
		return 0, 0, fmt.Errorf("persistence: restore %q groups [%d,%d): %w", op, first, end, err)
	}
	return st.keys, st.bytes, nil
}

// restoreStats tells what a restore did.
type restoreStats struct {
	keys    int   // src's keys in the groups
	bytes   int64 // and their bytes
	linked  int   // table files ingested whole
	written int   // entries written to the delta table
}

func (db *DB) restoreGroups(src *Snapshot, op string, first, end int, tmpDir string) (st restoreStats, err error) {
	span := GroupSpan(op, first, end)
	if err := os.MkdirAll(tmpDir, 0o755); err != nil {
		return st, err
	}
	tmp, err := os.MkdirTemp(tmpDir, "restore-*")
	if err != nil {
		return st, err
	}
	defer os.RemoveAll(tmp)
	linked, err := src.linkable(span)
	if err != nil {
		return st, err
	}
	var paths []string
	for i, t := range linked {
		p := filepath.Join(tmp, fmt.Sprintf("link-%d.sst", i))
		if err := os.Link(t.path, p); err != nil {
			linked, paths = nil, nil // another file system: rewrite all
			break
		}
		paths = append(paths, p)
	}

	db.mu.RLock()
	defer db.mu.RUnlock()
	if db.closed {
		return st, ErrClosed
	}
	excise := pebble.KeyRange{Start: span.Start, End: span.End}
	if len(paths) > 0 {
		if _, err := db.pdb.IngestAndExcise(context.Background(), paths, nil, nil, excise); err != nil {
			linked = nil // not ingestible here (a table format this DB does not take): rewrite all
		}
	}
	st.linked = len(linked)
	delta := filepath.Join(tmp, "delta.sst")
	st.keys, st.bytes, st.written, err = writeDelta(delta, db.pdb, src.pdb, span, linked)
	if err != nil {
		return st, err
	}
	switch {
	case st.linked > 0 && st.written > 0:
		err = db.pdb.Ingest(context.Background(), []string{delta})
	case st.linked > 0:
	case st.written > 0:
		_, err = db.pdb.IngestAndExcise(context.Background(), []string{delta}, nil, nil, excise)
	default:
		err = db.pdb.Excise(context.Background(), excise)
	}
	return st, err
}

// CheckpointDir is where, under a node's data directory, checkpoint
// directories live.
func CheckpointDir(dataDir string) string { return filepath.Join(dataDir, "checkpoints") }
