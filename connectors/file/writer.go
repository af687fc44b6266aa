package file

import (
	"fmt"
	"io"
	"os"
	"sync"
)

// sharedWriter is the destination of sink instances: one per file path in
// the process (shared, reference-counted), or one per instance for stdout
// (all sharing stdoutMu). Instances hand it whole lines only and write
// under its lock, so lines of different instances never interleave.
//
// Lock order: files.mu before a sharedWriter's mu. (acquire and release
// take files.mu only; release closes a file nobody else holds, so without
// its mu.)
type sharedWriter struct {
	mu *sync.Mutex // guards the fields below and writes to w

	w       io.Writer
	f       *os.File // nil for stdout: not synced
	dirty   bool     // written since the last sync
	syncErr error    // sticky: after a failed fsync, written data may be lost

	path string // key in files; "" for stdout
	refs int    // guarded by files.mu
}

// files holds the open files of the sinks in the process, by absolute path.
var files = struct {
	mu sync.Mutex
	m  map[string]*sharedWriter
}{m: make(map[string]*sharedWriter)}

// stdoutMu serialises writes of every sink writing to stdout (or its
// SinkConfig.Stdout).
var stdoutMu sync.Mutex

// acquireFile opens path for appending, or shares the file already open.
func acquireFile(path string, perm os.FileMode) (*sharedWriter, error) {
	files.mu.Lock()
	defer files.mu.Unlock()
	if w := files.m[path]; w != nil {
		w.refs++
		return w, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, perm)
	if err != nil {
		return nil, err
	}
	w := &sharedWriter{mu: new(sync.Mutex), w: f, f: f, path: path, refs: 1}
	files.m[path] = w
	return w, nil
}

// stdoutWriter returns a writer of out sharing stdoutMu.
func stdoutWriter(out io.Writer) *sharedWriter {
	return &sharedWriter{mu: &stdoutMu, w: out, refs: 1}
}

// release drops a reference; the last one closes the file.
func (w *sharedWriter) release() error {
	if w.path == "" {
		return nil
	}
	files.mu.Lock()
	defer files.mu.Unlock()
	if w.refs--; w.refs > 0 {
		return nil
	}
	delete(files.m, w.path)
	return w.f.Close()
}

// write writes p, which holds whole lines, and returns how many bytes were
// written: all of them, or fewer with the error.
func (w *sharedWriter) write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for n < len(p) {
		m, err := w.w.Write(p[n:])
		n += m
		if m > 0 {
			w.dirty = true
		}
		if err != nil {
			return n, err
		}
		if m == 0 {
			return n, io.ErrShortWrite
		}
	}
	return n, nil
}

// sync makes everything written to a file durable (fsync). It holds the
// lock during the fsync, so that no instance returns from sync before the
// data it wrote is on disk. A failed fsync is reported by every later sync
// as well: the kernel may have dropped the data, and a retried fsync would
// succeed without bringing it back.
func (w *sharedWriter) sync() error {
	if w.f == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.syncErr != nil {
		return w.syncErr
	}
	if !w.dirty {
		return nil
	}
	if err := w.f.Sync(); err != nil {
		w.syncErr = fmt.Errorf("fsync %s: %w (data written before it may be lost)", w.path, err)
		return w.syncErr
	}
	w.dirty = false
	return nil
}
