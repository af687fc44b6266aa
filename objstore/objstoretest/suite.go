// Package objstoretest is the conformance suite for objstore.Store
// backends. A backend's test calls RunSuite with a function that returns a
// fresh, empty store for each subtest:
//
//	func TestConformance(t *testing.T) {
//		objstoretest.RunSuite(t, func(t *testing.T) objstore.Store {
//			st, err := fsstore.Open(t.TempDir())
//			...
//			return st
//		})
//	}
//
// The suite checks the contract documented on objstore.Store: round trips
// (empty, small, multi-part sized, odd keys), not-found and invalid-key
// errors, replacing, deleting, listing (prefixes, order, more keys than an
// S3 page), readers of the wrong length or failing midway, cancellation,
// and that a reader of a key never sees a partial object while it is
// replaced.
package objstoretest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/objstore"
)

// Timeout bounds each subtest's calls.
const Timeout = 2 * time.Minute

// LargeSize is the size of the suite's large objects: more than one part
// of an S3 multipart upload at the default part size (16 MiB).
const LargeSize = 24<<20 + 123

// ManyKeys is how many objects the listing test puts: more than two S3
// list pages of 1000.
const ManyKeys = 2100

// RunSuite runs the conformance suite, calling newStore for a fresh,
// empty store in each subtest.
func RunSuite(t *testing.T, newStore func(t *testing.T) objstore.Store) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, st objstore.Store)
	}{
		{"RoundTrip", testRoundTrip},
		{"NotFound", testNotFound},
		{"Replace", testReplace},
		{"Delete", testDelete},
		{"List", testList},
		{"ListMany", testListMany},
		{"InvalidKeys", testInvalidKeys},
		{"SizeMismatch", testSizeMismatch},
		{"ReaderError", testReaderError},
		{"Large", testLarge},
		{"Canceled", testCanceled},
		{"ReplaceIsAtomic", testReplaceIsAtomic},
		{"Concurrent", testConcurrent},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newStore(t)) })
	}
}

func testRoundTrip(t *testing.T, st objstore.Store) {
	ctx := ctxFor(t)
	for _, tc := range []struct {
		name string
		key  string
		data []byte
	}{
		{"empty", "empty", nil},
		{"small", "a/b/c.sst", Data(1, 1000)},
		{"one byte", "x", []byte{0}},
		{"odd key", "sp ace/ünï+cödé%20&?=#;,@!$'()*[]~/f.sst", Data(2, 300)},
		{"dots", "..x/.hidden/y..", Data(3, 10)},
		{"max segment", strings.Repeat("s", objstore.MaxSegmentLen) + "/k", Data(4, 10)},
		{"1 MiB", "ckpt/000001/000042.sst", Data(5, 1<<20)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := time.Now()
			put(t, st, tc.key, tc.data)
			after := time.Now()
			wantObject(t, st, tc.key, tc.data)
			info, err := st.Stat(ctx, tc.key)
			if err != nil {
				t.Fatalf("Stat(%q): %v", tc.key, err)
			}
			if info.Key != tc.key || info.Size != int64(len(tc.data)) {
				t.Errorf("Stat(%q): got key %q size %d, want key %q size %d", tc.key, info.Key, info.Size, tc.key, len(tc.data))
			}
			// S3 keeps seconds; allow for that and a little clock skew.
			if info.ModTime.Before(before.Add(-2*time.Second)) || info.ModTime.After(after.Add(2*time.Second)) {
				t.Errorf("Stat(%q).ModTime: got %v, want between %v and %v", tc.key, info.ModTime, before, after)
			}
			infos, err := st.List(ctx, tc.key)
			if err != nil {
				t.Fatalf("List(%q): %v", tc.key, err)
			}
			if len(infos) != 1 || infos[0].Key != tc.key || infos[0].Size != int64(len(tc.data)) {
				t.Errorf("List(%q): got %+v, want the one object of %d bytes", tc.key, infos, len(tc.data))
			}
		})
	}
	// A seekable reader is read from its current offset.
	data := Data(6, 5000)
	r := bytes.NewReader(data)
	r.Seek(1000, io.SeekStart)
	if err := st.Put(ctx, "seeked", r, 4000); err != nil {
		t.Fatalf("Put(seeked reader): %v", err)
	}
	wantObject(t, st, "seeked", data[1000:])
}

func testNotFound(t *testing.T, st objstore.Store) {
	ctx := ctxFor(t)
	put(t, st, "dir/present", []byte("x"))
	for _, key := range []string{"missing", "dir/missing", "nodir/missing", "dir/present/below", "dir"} {
		if _, err := st.Get(ctx, key); !errors.Is(err, objstore.ErrNotFound) {
			t.Errorf("Get(%q): got %v, want ErrNotFound", key, err)
		}
		if _, err := st.Stat(ctx, key); !errors.Is(err, objstore.ErrNotFound) {
			t.Errorf("Stat(%q): got %v, want ErrNotFound", key, err)
		}
		if err := st.Delete(ctx, key); err != nil {
			t.Errorf("Delete(%q) of a missing key: got %v, want nil", key, err)
		}
	}
	if got := keys(t, st, ""); !slices.Equal(got, []string{"dir/present"}) {
		t.Errorf("List after deleting missing keys: got %q, want [dir/present]", got)
	}
	if got := keys(t, st, "nothing/"); len(got) != 0 {
		t.Errorf("List(nothing/): got %q, want none", got)
	}
}

func testReplace(t *testing.T, st objstore.Store) {
	put(t, st, "k", Data(1, 5000))
	v2 := Data(2, 1234)
	put(t, st, "k", v2)
	wantObject(t, st, "k", v2)
	infos, err := st.List(ctxFor(t), "")
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if len(infos) != 1 || infos[0].Size != int64(len(v2)) {
		t.Errorf("List after replacing: got %+v, want one object of %d bytes", infos, len(v2))
	}
}

func testDelete(t *testing.T, st objstore.Store) {
	ctx := ctxFor(t)
	put(t, st, "d/1/a", []byte("a"))
	put(t, st, "d/1/b", []byte("b"))
	put(t, st, "d/2/c", []byte("c"))
	for _, key := range []string{"d/1/a", "d/2/c", "d/2/c"} { // twice: still fine
		if err := st.Delete(ctx, key); err != nil {
			t.Fatalf("Delete(%q): %v", key, err)
		}
	}
	if _, err := st.Stat(ctx, "d/1/a"); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("Stat of a deleted key: got %v, want ErrNotFound", err)
	}
	if got := keys(t, st, ""); !slices.Equal(got, []string{"d/1/b"}) {
		t.Errorf("List after deletes: got %q, want [d/1/b]", got)
	}
	wantObject(t, st, "d/1/b", []byte("b"))
	// The key can be used again, also where a directory was emptied.
	put(t, st, "d/2/c", []byte("again"))
	wantObject(t, st, "d/2/c", []byte("again"))
}

func testList(t *testing.T, st objstore.Store) {
	all := []string{ // in byte order: '.' < '/' < '0'
		"ckpt.meta",
		"ckpt/0001.done",
		"ckpt/0001/a.sst",
		"ckpt/0001/b.sst",
		"ckpt/0002/a.sst",
		"ckpt/0010/a.sst",
		"ckpt/MANIFEST",
		"other/x",
	}
	shuffled := slices.Clone(all)
	rand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	for i, k := range shuffled {
		put(t, st, k, Data(uint64(i), i*10))
	}
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"", all},
		{"ckpt", all[:7]},
		{"ckpt/", all[1:7]},
		{"ckpt/000", all[1:5]},
		{"ckpt/00", all[1:6]},
		{"ckpt/0001", all[1:4]},
		{"ckpt/0001/", all[2:4]},
		{"ckpt/0001/a.sst", all[2:3]},
		{"ckpt/0001/a.sst/", nil},
		{"ckpt/1", nil},
		{"o", all[7:]},
		{"zzz", nil},
		{".", nil},
	} {
		if got := keys(t, st, tc.prefix); !slices.Equal(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
			t.Errorf("List(%q): got %q, want %q", tc.prefix, got, tc.want)
		}
	}
	infos, err := st.List(ctxFor(t), "")
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	for _, in := range infos {
		i := slices.Index(shuffled, in.Key)
		if in.Size != int64(i*10) {
			t.Errorf("List: %q has size %d, want %d", in.Key, in.Size, i*10)
		}
		if in.ModTime.IsZero() {
			t.Errorf("List: %q has no ModTime", in.Key)
		}
	}
}

func testListMany(t *testing.T, st objstore.Store) {
	ctx := ctxFor(t)
	var want []string
	for i := range ManyKeys {
		want = append(want, fmt.Sprintf("many/%05d", i))
	}
	start := time.Now()
	work := make(chan string)
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for k := range work {
				if err := st.Put(ctx, k, strings.NewReader(k), int64(len(k))); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for _, k := range want {
		select {
		case work <- k:
		case err := <-errs:
			close(work)
			wg.Wait()
			t.Fatalf("Put: %v", err)
		}
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatalf("Put: %v", err)
	default:
	}
	t.Logf("put %d small objects with 8 goroutines in %v", ManyKeys, time.Since(start).Round(time.Millisecond))
	start = time.Now()
	if got := keys(t, st, ""); !slices.Equal(got, want) {
		t.Fatalf("List: got %d keys (first %q), want %d (%q...%q)", len(got), got[:min(3, len(got))], len(want), want[0], want[len(want)-1])
	}
	t.Logf("listed %d keys in %v", ManyKeys, time.Since(start).Round(time.Millisecond))
	if got := keys(t, st, "many/01"); !slices.Equal(got, want[1000:2000]) {
		t.Errorf("List(many/01): got %d keys, want 1000 (many/01000...many/01999)", len(got))
	}
}

func testInvalidKeys(t *testing.T, st objstore.Store) {
	ctx := ctxFor(t)
	put(t, st, "a/b", []byte("x"))
	for _, key := range []string{
		"", "/abs", "a/", "a//b", ".", "..", "../x", "a/../b", "a/./b", "a/..", "x\x00y", "x\ny", "back\\slash",
		"\xff\xfe", strings.Repeat("k", objstore.MaxSegmentLen+1), strings.Repeat("k/", objstore.MaxKeyLen/2) + "k",
		objstore.ReservedPrefix + "tmp-1", "a/" + objstore.ReservedPrefix + "x",
	} {
		if err := st.Put(ctx, key, strings.NewReader("x"), 1); !errors.Is(err, objstore.ErrInvalidKey) {
			t.Errorf("Put(%q): got %v, want ErrInvalidKey", key, err)
		}
		if _, err := st.Get(ctx, key); !errors.Is(err, objstore.ErrInvalidKey) {
			t.Errorf("Get(%q): got %v, want ErrInvalidKey", key, err)
		}
		if _, err := st.Stat(ctx, key); !errors.Is(err, objstore.ErrInvalidKey) {
			t.Errorf("Stat(%q): got %v, want ErrInvalidKey", key, err)
		}
		if err := st.Delete(ctx, key); !errors.Is(err, objstore.ErrInvalidKey) {
			t.Errorf("Delete(%q): got %v, want ErrInvalidKey", key, err)
		}
	}
	for _, prefix := range []string{"/", "/a", "a//", "../", "a/./", "x\x00", "\\", objstore.ReservedPrefix} {
		if _, err := st.List(ctx, prefix); !errors.Is(err, objstore.ErrInvalidKey) {
			t.Errorf("List(%q): got %v, want ErrInvalidKey", prefix, err)
		}
	}
	if got := keys(t, st, ""); !slices.Equal(got, []string{"a/b"}) {
		t.Errorf("List after invalid calls: got %q, want [a/b]", got)
	}
}

func testSizeMismatch(t *testing.T, st objstore.Store) {
	ctx := ctxFor(t)
	orig := Data(1, 100)
	put(t, st, "k", orig)
	data := Data(2, 3000)
	stream := func(b []byte) func() io.Reader { return func() io.Reader { return onlyReader{bytes.NewReader(b)} } }
	seekable := func(b []byte) func() io.Reader { return func() io.Reader { return bytes.NewReader(b) } }
	for _, tc := range []struct {
		name string
		r    func() io.Reader
		size int64
	}{
		{"stream shorter", stream(data[:2999]), 3000},
		{"stream longer", stream(data), 2999},
		// A multiple of S3's default part size: minio-go reads exactly the
		// last part and would not look further.
		{"stream longer, 32 MiB", stream(Data(3, 32<<20+1)), 32 << 20},
		{"stream empty", stream(nil), 10},
		{"stream for empty", stream(data[:1]), 0},
		{"seekable shorter", seekable(data[:2999]), 3000},
		{"seekable longer", seekable(data), 2999},
		{"seekable for empty", seekable(data[:1]), 0},
		{"negative size", seekable(data), -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := st.Put(ctx, "k", tc.r(), tc.size); !errors.Is(err, objstore.ErrSizeMismatch) {
				t.Errorf("Put over an object: got %v, want ErrSizeMismatch", err)
			}
			wantObject(t, st, "k", orig)
			if err := st.Put(ctx, "new", tc.r(), tc.size); !errors.Is(err, objstore.ErrSizeMismatch) {
				t.Errorf("Put of a new key: got %v, want ErrSizeMismatch", err)
			}
			if got := keys(t, st, ""); !slices.Equal(got, []string{"k"}) {
				t.Errorf("List after failed puts: got %q, want [k]", got)
			}
		})
	}
}

func testReaderError(t *testing.T, st objstore.Store) {
	ctx := ctxFor(t)
	orig := Data(1, 100)
	put(t, st, "k", orig)
	// Small (one request) and large (multipart on S3) objects, failing
	// after the first part for the large one.
	for _, tc := range []struct {
		size, failAt int
	}{{3 << 20, 1 << 20}, {LargeSize, 20 << 20}} {
		data := Data(2, tc.size)
		err := st.Put(ctx, "k", &failingReader{data: data, n: tc.failAt}, int64(tc.size))
		if !errors.Is(err, errBoom) {
			t.Errorf("Put(%d bytes, reader failing at %d): got %v, want the reader's error", tc.size, tc.failAt, err)
		}
		wantObject(t, st, "k", orig)
	}
	if got := keys(t, st, ""); !slices.Equal(got, []string{"k"}) {
		t.Errorf("List after failed puts: got %q, want [k]", got)
	}
}

func testLarge(t *testing.T, st objstore.Store) {
	ctx := ctxFor(t)
	data := Data(7, LargeSize)
	t.Run("stream", func(t *testing.T) {
		put(t, st, "large/stream", data)
		wantObject(t, st, "large/stream", data)
	})
	t.Run("file at an offset", func(t *testing.T) {
		// An *os.File is an io.ReaderAt: S3 uploads its parts in parallel.
		path := filepath.Join(t.TempDir(), "src")
		junk := Data(8, 12345)
		if err := os.WriteFile(path, append(junk, data...), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.Seek(int64(len(junk)), io.SeekStart); err != nil {
			t.Fatal(err)
		}
		if err := st.Put(ctx, "large/file", f, int64(len(data))); err != nil {
			t.Fatalf("Put(file): %v", err)
		}
		wantObject(t, st, "large/file", data)
	})
	infos, err := st.List(ctx, "large/")
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range infos {
		if in.Size != LargeSize {
			t.Errorf("List: %q has %d bytes, want %d", in.Key, in.Size, LargeSize)
		}
	}
}

func testCanceled(t *testing.T, st objstore.Store) {
	orig := Data(1, 100)
	put(t, st, "k", orig)
	done, cancel := context.WithCancel(t.Context())
	cancel()
	if err := st.Put(done, "k", bytes.NewReader([]byte("new")), 3); !errors.Is(err, context.Canceled) {
		t.Errorf("Put with a canceled context: got %v, want context.Canceled", err)
	}
	if _, err := st.Get(done, "k"); !errors.Is(err, context.Canceled) {
		t.Errorf("Get with a canceled context: got %v, want context.Canceled", err)
	}
	if _, err := st.List(done, ""); !errors.Is(err, context.Canceled) {
		t.Errorf("List with a canceled context: got %v, want context.Canceled", err)
	}

	// Canceled in the middle of the upload (one request, then multipart).
	for _, size := range []int{8 << 20, LargeSize} {
		ctx, cancel := context.WithCancel(t.Context())
		r := &cancelingReader{r: onlyReader{bytes.NewReader(Data(2, size))}, n: size / 2, cancel: cancel}
		err := st.Put(ctx, "k", r, int64(size))
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Put(%d bytes) canceled midway: got %v, want context.Canceled", size, err)
		}
		wantObject(t, st, "k", orig)
	}

	// A reader returned by Get fails once its context is done.
	big := Data(3, 4<<20)
	put(t, st, "big", big)
	ctx, cancelGet := context.WithCancel(t.Context())
	rc, err := st.Get(ctx, "big")
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	defer rc.Close()
	if _, err := io.ReadFull(rc, make([]byte, 1000)); err != nil {
		t.Fatalf("read: %v", err)
	}
	cancelGet()
	if n, err := io.Copy(io.Discard, rc); err == nil {
		t.Errorf("reading on after the context was canceled: got %d more bytes and no error, want an error", n)
	}
	if got := keys(t, st, ""); !slices.Equal(got, []string{"big", "k"}) {
		t.Errorf("List: got %q, want [big k]", got)
	}
}

// testReplaceIsAtomic replaces a key again and again while readers read
// it: every read must be one whole version (a version's bytes all equal
// its number), and List must show only the key with a whole version's
// size.
func testReplaceIsAtomic(t *testing.T, st objstore.Store) {
	const size, versions = 6 << 20, 8
	ctx := ctxFor(t)
	version := func(v int) []byte { return bytes.Repeat([]byte{byte(v)}, size) }
	put(t, st, "k", version(0))

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var problems []string
	var reads int
	report := func(format string, args ...any) {
		mu.Lock()
		problems = append(problems, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				rc, err := st.Get(ctx, "k")
				if err != nil {
					report("Get: %v", err)
					return
				}
				b, err := io.ReadAll(rc)
				rc.Close()
				if err != nil {
					report("read: %v", err)
					return
				}
				if len(b) != size || bytes.Count(b, b[:1]) != size {
					report("read a partial or mixed object: %d bytes, first %d, last %d", len(b), b[0], b[len(b)-1])
				}
				infos, err := st.List(ctx, "")
				if err != nil {
					report("List: %v", err)
					return
				}
				if len(infos) != 1 || infos[0].Key != "k" || infos[0].Size != size {
					report("List during puts: got %+v, want k with %d bytes", infos, size)
				}
				mu.Lock()
				reads++
				mu.Unlock()
			}
		})
	}
	for v := 1; v <= versions; v++ {
		if err := st.Put(ctx, "k", bytes.NewReader(version(v)), size); err != nil {
			report("Put(version %d): %v", v, err)
			break
		}
	}
	close(stop)
	wg.Wait()
	for _, p := range problems {
		t.Error(p)
	}
	t.Logf("%d whole reads during %d replacements", reads, versions)
	wantObject(t, st, "k", version(versions))
}

func testConcurrent(t *testing.T, st objstore.Store) {
	ctx := ctxFor(t)
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 10 {
				key := fmt.Sprintf("c/%02d/%02d", g, i)
				data := Data(uint64(g*100+i), 1000+g*i)
				if err := st.Put(ctx, key, bytes.NewReader(data), int64(len(data))); err != nil {
					errs <- err
					return
				}
				rc, err := st.Get(ctx, key)
				if err != nil {
					errs <- err
					return
				}
				got, err := io.ReadAll(rc)
				rc.Close()
				if err != nil || !bytes.Equal(got, data) {
					errs <- fmt.Errorf("%s: read back %d bytes (%v), want %d", key, len(got), err, len(data))
					return
				}
				if i%2 == 1 {
					if err := st.Delete(ctx, key); err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := keys(t, st, "c/"); len(got) != 16*5 {
		t.Errorf("List(c/): got %d keys, want %d", len(got), 16*5)
	}
}
