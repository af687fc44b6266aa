package objstoretest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluicehq/sluice/objstore"
)

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), Timeout)
	t.Cleanup(cancel)
	return ctx
}

// Data returns n pseudo-random bytes derived from seed.
func Data(seed uint64, n int) []byte {
	b := make([]byte, n+8)
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	for i := 0; i < n; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], r.Uint64())
	}
	return b[:n:n]
}

// put stores b under key from a non-seekable reader, failing t on error.
func put(t *testing.T, st objstore.Store, key string, b []byte) {
	t.Helper()
	if err := st.Put(ctxFor(t), key, onlyReader{bytes.NewReader(b)}, int64(len(b))); err != nil {
		t.Fatalf("Put(%q, %d bytes): %v", key, len(b), err)
	}
}

// get returns the object under key, failing t on error.
func get(t *testing.T, st objstore.Store, key string) []byte {
	t.Helper()
	rc, err := st.Get(ctxFor(t), key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("Get(%q): read: %v", key, err)
	}
	return b
}

// wantObject checks that key holds exactly want.
func wantObject(t *testing.T, st objstore.Store, key string, want []byte) {
	t.Helper()
	if got := get(t, st, key); !bytes.Equal(got, want) {
		t.Fatalf("Get(%q): got %d bytes (sha256 %x), want %d bytes (sha256 %x)",
			key, len(got), sha256.Sum256(got), len(want), sha256.Sum256(want))
	}
}

// keys lists prefix and returns the keys, failing t on error.
func keys(t *testing.T, st objstore.Store, prefix string) []string {
	t.Helper()
	infos, err := st.List(ctxFor(t), prefix)
	if err != nil {
		t.Fatalf("List(%q): %v", prefix, err)
	}
	out := make([]string, 0, len(infos))
	for _, in := range infos {
		out = append(out, in.Key)
	}
	return out
}

// onlyReader hides every method but Read (no Seek, ReadAt or WriteTo), as
// a network stream would.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

var errBoom = errors.New("objstoretest: reader failed")

// failingReader yields n bytes of data, then fails with errBoom.
type failingReader struct {
	data []byte
	n    int
}

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n == 0 {
		return 0, errBoom
	}
	k := copy(p[:min(len(p), f.n)], f.data)
	f.data, f.n = f.data[k:], f.n-k
	return k, nil
}

// cancelingReader cancels its context after yielding n bytes, and keeps
// yielding data.
type cancelingReader struct {
	r      io.Reader
	n      int
	cancel context.CancelFunc
}

func (c *cancelingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	if c.n -= k; c.n <= 0 {
		c.cancel()
	}
	return k, err
}

// BenchmarkPut measures Put of a size-byte object from a file (as a
// checkpoint uploads an SST) b.N times, reporting MB/s.
func BenchmarkPut(b *testing.B, st objstore.Store, size int) {
	path := filepath.Join(b.TempDir(), "src")
	if err := os.WriteFile(path, Data(1, size), 0o644); err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	b.SetBytes(int64(size))
	for i := 0; b.Loop(); i++ {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			b.Fatal(err)
		}
		if err := st.Put(b.Context(), fmt.Sprintf("bench/%d", i), f, int64(size)); err != nil {
			b.Fatal(err)
		}
	}
}
