package persistence

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

func TestWindowFileReadAt(t *testing.T) {
	data := make([]byte, 2*restoreIOSize+1234)
	for i := range data {
		data[i] = byte(i * 7 % 251)
	}
	path := filepath.Join(t.TempDir(), "000001.sst")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := windowFS{vfs.Default}.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, ok := f.(*windowFile); !ok {
		t.Fatalf("a table file opened as %T, want *windowFile", f)
	}
	read := func(name string, off int64, n int) {
		t.Helper()
		p := make([]byte, n)
		got, err := f.ReadAt(p, off)
		want := min(n, max(len(data)-int(off), 0))
		if got != want || !bytes.Equal(p[:got], data[off:off+int64(got)]) {
			t.Fatalf("%s: ReadAt(%d bytes at %d) = %d bytes (equal %v), want %d", name, n, off, got, bytes.Equal(p[:got], data[off:off+int64(got)]), want)
		}
		if want < n && !errors.Is(err, io.EOF) {
			t.Fatalf("%s: short read returned %v, want io.EOF", name, err)
		}
		if want == n && err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	read("footer", int64(len(data))-48, 48)
	read("first block", 0, 4096)
	off := int64(4096)
	for ; off < int64(len(data))-5000; off += 4101 { // across window boundaries
		read("sequential block", off, 4101)
	}
	read("sequential, past the end", off, 8192)
	read("back to the start", 100, 4096)
	read("tail, short", int64(len(data))-1000, 4096)
	read("large", 10, restoreIOSize)
}
