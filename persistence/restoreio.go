package persistence

import (
	"bufio"
	"os"
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/v2/objstorage"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Large sequential I/O for restores. A restore reads a checkpoint's table
// files from end to end and writes one table of the same size; Pebble
// reads a 4 KiB block per system call and writes through a 4 KiB buffer,
// and with 1 KiB values the system calls took most of a restore's time
// (0.6 s of 0.9 s of CPU for 170 MB).

// restoreIOSize is the window a checkpoint's table file is read by, and
// the buffer a restored table is written through.
const restoreIOSize = 1 << 20

// windowFS is a read-only file system for a checkpoint: table files read
// in windows of restoreIOSize.
type windowFS struct{ vfs.FS }

// Open implements vfs.FS.
func (fs windowFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.Open(name, opts...)
	if err != nil || !strings.HasSuffix(name, ".sst") {
		return f, err
	}
	return &windowFile{File: f}, nil
}

// windowFile serves a sequential run of reads (a scan of data blocks)
// from windows of restoreIOSize; other reads (footer, index, properties)
// go to the file. It is safe for concurrent use (Pebble shares an open
// table between iterators).
type windowFile struct {
	vfs.File

	mu   sync.Mutex
	buf  []byte // the window's bytes
	off  int64  // the window's offset in the file
	next int64  // where the last read ended
}

// ReadAt implements io.ReaderAt.
func (f *windowFile) ReadAt(p []byte, off int64) (int, error) {
	if len(p) >= restoreIOSize {
		return f.File.ReadAt(p, off)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	inWindow := off >= f.off && off+int64(len(p)) <= f.off+int64(len(f.buf))
	sequential := off == f.next
	f.next = off + int64(len(p))
	if !inWindow && !sequential {
		return f.File.ReadAt(p, off)
	}
	if !inWindow {
		if f.buf == nil {
			f.buf = make([]byte, restoreIOSize)
		}
		n, err := f.File.ReadAt(f.buf[:cap(f.buf)], off)
		f.buf, f.off = f.buf[:n], off
		if n < len(p) {
			copy(p, f.buf)
			return n, err // io.EOF, or the read's error
		}
	}
	return copy(p, f.buf[off-f.off:]), nil
}

// bufferedWritable writes a table file through a buffer of restoreIOSize
// and syncs it when finished.
type bufferedWritable struct {
	f *os.File
	w *bufio.Writer
}

var _ objstorage.Writable = (*bufferedWritable)(nil)

func newBufferedWritable(f *os.File) *bufferedWritable {
	return &bufferedWritable{f: f, w: bufio.NewWriterSize(f, restoreIOSize)}
}

// Write implements objstorage.Writable.
func (w *bufferedWritable) Write(p []byte) error {
	_, err := w.w.Write(p)
	return err
}

// Finish implements objstorage.Writable.
func (w *bufferedWritable) Finish() error {
	err := w.w.Flush()
	if err == nil {
		err = w.f.Sync()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Abort implements objstorage.Writable.
func (w *bufferedWritable) Abort() { _ = w.f.Close() }
