package fsstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/sluicehq/sluice/objstore"
	"github.com/sluicehq/sluice/objstore/objstoretest"
)

func open(t testing.TB, dir string) *Store {
	t.Helper()
	st, err := Open(dir)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	return st
}

func TestConformance(t *testing.T) {
	objstoretest.RunSuite(t, func(t *testing.T) objstore.Store {
		st := open(t, t.TempDir())
		t.Cleanup(func() { checkNoTempFiles(t, st.Dir()) })
		return st
	})
}

// checkNoTempFiles fails t if a temporary file is left under dir.
func checkNoTempFiles(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), objstore.ReservedPrefix) {
			t.Errorf("temporary file left behind: %s", p)
		}
		return nil
	})
}

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	st := open(t, "rel/store")
	if want := filepath.Join(dir, "rel", "store"); st.Dir() != want {
		t.Errorf("Dir: got %s, want %s", st.Dir(), want)
	}
	if fi, err := os.Stat(st.Dir()); err != nil || !fi.IsDir() {
		t.Errorf("Open did not create the directory: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "file"), nil, 0o644)
	if _, err := Open(filepath.Join(dir, "file")); err == nil {
		t.Errorf("Open(a file): got no error")
	}
	if _, err := Open(""); err == nil {
		t.Errorf("Open(\"\"): got no error")
	}
}

func TestObjectsAreFilesAtTheirKeys(t *testing.T) {
	st := open(t, t.TempDir())
	ctx := t.Context()
	if err := st.Put(ctx, "ckpt/1/a.sst", strings.NewReader("abc"), 3); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(st.Dir(), "ckpt", "1", "a.sst"))
	if err != nil || string(b) != "abc" {
		t.Errorf("file ckpt/1/a.sst: got %q, %v; want abc", b, err)
	}
}

func TestDeletePrunesEmptyDirectories(t *testing.T) {
	st := open(t, t.TempDir())
	ctx := t.Context()
	for _, k := range []string{"a/b/c/d", "a/x"} {
		if err := st.Put(ctx, k, strings.NewReader(k), int64(len(k))); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Delete(ctx, "a/b/c/d"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(st.Dir(), "a", "b")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a/b after deleting its only object: got %v, want it removed", err)
	}
	if err := st.Delete(ctx, "a/x"); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(st.Dir())
	if len(entries) != 0 {
		t.Errorf("root after deleting everything: got %d entries, want none", len(entries))
	}
	if _, err := os.Stat(st.Dir()); err != nil {
		t.Errorf("root itself must stay: %v", err)
	}
}

func TestKeyThatIsAPathOfAnother(t *testing.T) {
	st := open(t, t.TempDir())
	ctx := t.Context()
	if err := st.Put(ctx, "a", strings.NewReader("a"), 1); err != nil {
		t.Fatal(err)
	}
	if err := st.Put(ctx, "a/b", strings.NewReader("b"), 1); err == nil || !strings.Contains(err.Error(), "is an object") {
		t.Errorf("Put(a/b) with object a: got %v, want an error saying a is an object", err)
	}
	if err := st.Put(ctx, "c/d", strings.NewReader("d"), 1); err != nil {
		t.Fatal(err)
	}
	if err := st.Put(ctx, "c", strings.NewReader("c"), 1); err == nil {
		t.Errorf("Put(c) with object c/d: got no error")
	}
	if err := st.Delete(ctx, "c"); err != nil {
		t.Errorf("Delete(c), a directory: got %v, want nil (no object)", err)
	}
	if got, _ := st.List(ctx, ""); len(got) != 2 {
		t.Errorf("List: got %+v, want a and c/d", got)
	}
	checkNoTempFiles(t, st.Dir())
}

func TestTempFilesOfCrashedPutsAreHidden(t *testing.T) {
	st := open(t, t.TempDir())
	ctx := t.Context()
	if err := st.Put(ctx, "d/k", strings.NewReader("k"), 1); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{tempPrefix + "1", "d/" + tempPrefix + "2"} {
		if err := os.WriteFile(filepath.Join(st.Dir(), p), []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	infos, err := st.List(ctx, "")
	if err != nil || len(infos) != 1 || infos[0].Key != "d/k" {
		t.Errorf("List: got %+v, %v; want only d/k", infos, err)
	}
}

// TestSharedDirectory runs two stores on one directory, as two nodes on a
// shared mount: one deletes keys (pruning their directory) while the other
// puts keys in the same directory.
func TestSharedDirectory(t *testing.T) {
	dir := t.TempDir()
	a, b := open(t, dir), open(t, dir)
	ctx := t.Context()
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for i, st := range []*Store{a, b} {
		wg.Go(func() {
			key := fmt.Sprintf("shared/dir/%d", i)
			for range 300 {
				if err := st.Put(ctx, key, strings.NewReader(key), int64(len(key))); err != nil {
					errs <- err
					return
				}
				if err := st.Delete(ctx, key); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := a.Put(ctx, "x", strings.NewReader("from a"), 6); err != nil {
		t.Fatal(err)
	}
	if info, err := b.Stat(ctx, "x"); err != nil || info.Size != 6 {
		t.Errorf("b.Stat of a's object: got %+v, %v", info, err)
	}
}

// TestWriteFailures makes the directory refuse writes: as root, a 1 MiB
// tmpfs that is filled and then remounted read-only; otherwise a directory
// without write permission (root ignores that).
func TestWriteFailures(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	if os.Geteuid() != 0 {
		st := open(t, dir)
		if err := st.Put(ctx, "old", strings.NewReader("old"), 3); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(dir, 0o755) })
		checkReadOnly(t, st, syscall.EACCES)
		return
	}

	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mount a 1 MiB tmpfs on %s: %v (as root this test needs CAP_SYS_ADMIN; as another user it uses a read-only directory instead)", dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	st := open(t, dir)
	if err := st.Put(ctx, "old", strings.NewReader("old"), 3); err != nil {
		t.Fatal(err)
	}

	t.Run("full", func(t *testing.T) {
		big := objstoretest.Data(1, 600<<10)
		if err := st.Put(ctx, "a", bytes.NewReader(big), int64(len(big))); err != nil {
			t.Fatalf("Put(600 KiB) on an empty 1 MiB tmpfs: %v", err)
		}
		err := st.Put(ctx, "b", bytes.NewReader(big), int64(len(big)))
		if !errors.Is(err, syscall.ENOSPC) || !strings.HasPrefix(err.Error(), `fsstore: put "b": `) {
			t.Fatalf("Put(600 KiB) with 400 KiB free: got %v, want a wrapped ENOSPC", err)
		}
		checkNoTempFiles(t, dir) // the partial temporary file is removed
		if infos, _ := st.List(ctx, ""); len(infos) != 2 {
			t.Errorf("List: got %+v, want old and a", infos)
		}
		if err := st.Delete(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		if err := st.Put(ctx, "b", bytes.NewReader(big), int64(len(big))); err != nil {
			t.Errorf("Put after freeing space: %v", err)
		}
		if err := st.Delete(ctx, "b"); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("read-only", func(t *testing.T) {
		if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_REMOUNT|syscall.MS_RDONLY, "size=1m"); err != nil {
			t.Fatalf("remount read-only: %v", err)
		}
		checkReadOnly(t, st, syscall.EROFS)
	})
}

// checkReadOnly checks that st, holding object "old", fails writes with
// errno and still reads.
func checkReadOnly(t *testing.T, st *Store, errno syscall.Errno) {
	t.Helper()
	ctx := context.Background()
	for _, key := range []string{"new", "old", "sub/new"} {
		err := st.Put(ctx, key, strings.NewReader("x"), 1)
		if !errors.Is(err, errno) || !strings.HasPrefix(err.Error(), "fsstore: put ") {
			t.Errorf("Put(%q) on a read-only directory: got %v, want a wrapped %v", key, err, errno)
		}
	}
	if err := st.Delete(ctx, "old"); !errors.Is(err, errno) {
		t.Errorf("Delete on a read-only directory: got %v, want a wrapped %v", err, errno)
	}
	rc, err := st.Get(ctx, "old")
	if err != nil {
		t.Fatalf("Get on a read-only directory: %v", err)
	}
	rc.Close()
	infos, err := st.List(ctx, "")
	if keys := keysOf(infos); err != nil || !slices.Equal(keys, []string{"old"}) {
		t.Errorf("List on a read-only directory: got %q, %v; want [old]", keys, err)
	}
}

func keysOf(infos []objstore.ObjectInfo) []string {
	var out []string
	for _, in := range infos {
		out = append(out, in.Key)
	}
	return out
}

func BenchmarkPut64MiB(b *testing.B) {
	objstoretest.BenchmarkPut(b, open(b, b.TempDir()), 64<<20)
}

func TestPutLink(t *testing.T) {
	dir := t.TempDir()
	st := open(t, filepath.Join(dir, "store"))
	ctx := t.Context()
	src := filepath.Join(dir, "000007.sst")
	if err := os.WriteFile(src, []byte("table"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := st.PutLink(ctx, "sst/db/000007.sst", src); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(st.Dir(), "sst", "db", "000007.sst"))
	if err != nil || string(b) != "table" {
		t.Fatalf("linked object: got %q, %v; want table", b, err)
	}
	a, _ := os.Stat(src)
	o, _ := os.Stat(filepath.Join(st.Dir(), "sst", "db", "000007.sst"))
	if !os.SameFile(a, o) {
		t.Error("the object is a copy, want a hard link of the file")
	}
	// The object outlives the file, as a table file deleted by its
	// database must.
	if err := os.Remove(src); err != nil {
		t.Fatal(err)
	}
	if info, err := st.Stat(ctx, "sst/db/000007.sst"); err != nil || info.Size != 5 {
		t.Fatalf("Stat after the file's removal: %+v, %v; want 5 bytes", info, err)
	}
	if err := st.PutLink(ctx, "sst/db/000008.sst", filepath.Join(dir, "missing.sst")); err == nil {
		t.Error("PutLink of a missing file: got no error")
	}
	if _, err := st.Stat(ctx, "sst/db/000008.sst"); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("after a failed PutLink: Stat got %v, want ErrNotFound", err)
	}
	if err := st.PutLink(ctx, "../escape", src); !errors.Is(err, objstore.ErrInvalidKey) {
		t.Errorf("PutLink of an invalid key: got %v, want ErrInvalidKey", err)
	}
	checkNoTempFiles(t, st.Dir())
}
