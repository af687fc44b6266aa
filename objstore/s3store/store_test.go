package s3store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/s3test"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/objstore"
	"github.com/sluicehq/sluice/objstore/objstoretest"
)

// configFor returns a Config for srv's bucket under prefix.
func configFor(srv *s3test.Server, prefix string) Config {
	return Config{
		Endpoint:        srv.Endpoint(),
		Bucket:          srv.Bucket(),
		Prefix:          prefix,
		AccessKeyID:     srv.AccessKey(),
		SecretAccessKey: srv.SecretKey(),
	}
}

func open(t testing.TB, cfg Config) *Store {
	t.Helper()
	st, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return st
}

var prefixes atomic.Int64

// uniquePrefix returns a fresh key prefix, so that stores on one server
// start empty.
func uniquePrefix() string { return fmt.Sprintf("t%d/", prefixes.Add(1)) }

func TestConformance(t *testing.T) {
	srv := s3test.Start(t)
	objstoretest.RunSuite(t, func(t *testing.T) objstore.Store {
		return open(t, configFor(srv, uniquePrefix()))
	})
}

// TestLayout checks where objects land in the bucket, and that List and
// Get of the store see nothing outside its prefix.
func TestLayout(t *testing.T) {
	srv := s3test.Start(t)
	ctx := t.Context()
	a := open(t, configFor(srv, "jobs/7/"))
	b := open(t, configFor(srv, "jobs/70/"))
	root := open(t, configFor(srv, ""))
	if err := a.Put(ctx, "ckpt/1.meta", strings.NewReader("a"), 1); err != nil {
		t.Fatal(err)
	}
	if err := b.Put(ctx, "ckpt/1.meta", strings.NewReader("bb"), 2); err != nil {
		t.Fatal(err)
	}
	infos, err := root.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := keysOf(infos); !slices.Equal(got, []string{"jobs/7/ckpt/1.meta", "jobs/70/ckpt/1.meta"}) {
		t.Errorf("bucket keys: got %q", got)
	}
	if infos, err := a.List(ctx, ""); err != nil || !slices.Equal(keysOf(infos), []string{"ckpt/1.meta"}) || infos[0].Size != 1 {
		t.Errorf("a.List: got %+v, %v; want its one object", infos, err)
	}
}

func TestListPages(t *testing.T) {
	srv := s3test.Start(t)
	cfg := configFor(srv, uniquePrefix())
	cfg.ListPageSize = 7
	st := open(t, cfg)
	ctx := t.Context()
	var want []string
	for i := range 50 {
		k := fmt.Sprintf("p/%03d", i)
		want = append(want, k)
		if err := st.Put(ctx, k, strings.NewReader(k), int64(len(k))); err != nil {
			t.Fatal(err)
		}
	}
	infos, err := st.List(ctx, "p/")
	if err != nil || !slices.Equal(keysOf(infos), want) {
		t.Errorf("List with pages of 7: got %d keys, %v; want %d", len(infos), err, len(want))
	}
}

func TestOpenErrors(t *testing.T) {
	srv := s3test.Start(t)
	ctx := t.Context()
	cfg := configFor(srv, "")
	cfg.Bucket = "no-such-bucket"
	if _, err := Open(ctx, cfg); err == nil || !strings.Contains(err.Error(), `bucket "no-such-bucket" does not exist`) {
		t.Errorf("Open(missing bucket): got %v", err)
	}
	cfg = configFor(srv, "")
	cfg.SecretAccessKey = "wrong"
	if _, err := Open(ctx, cfg); err == nil || !strings.Contains(err.Error(), "check the bucket") {
		t.Errorf("Open(wrong secret): got %v, want a failed bucket check", err)
	}
	cfg = configFor(srv, "")
	cfg.Endpoint = "http://" + closedAddr(t)
	began := time.Now()
	_, err := Open(ctx, cfg)
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("Open(nothing listening): got %v, want connection refused", err)
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("Open(nothing listening) took %v, want under 5s", d)
	}
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{AccessKeyID: "a", SecretAccessKey: "s"}, "Bucket is empty"},
		{Config{Bucket: "bkt", SecretAccessKey: "s"}, "AccessKeyID and SecretAccessKey"},
		{Config{Bucket: "bkt", AccessKeyID: "a", SecretAccessKey: "s", Prefix: "p"}, `end in "/"`},
		{Config{Bucket: "bkt", AccessKeyID: "a", SecretAccessKey: "s", Prefix: "a//"}, "empty segment"},
		{Config{Bucket: "bkt", AccessKeyID: "a", SecretAccessKey: "s", PartSize: 1 << 20}, "minimum part size"},
		{Config{Bucket: "bkt", AccessKeyID: "a", SecretAccessKey: "s", ListPageSize: 1001}, "ListPageSize"},
		{Config{Bucket: "bkt", AccessKeyID: "a", SecretAccessKey: "s", Endpoint: "ftp://x"}, "http or https"},
		{Config{Bucket: "bkt", AccessKeyID: "a", SecretAccessKey: "s", Endpoint: "http://x/y"}, "no path"},
	} {
		if err := tc.cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%+v): got %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// ops runs every Store method once against st, returning each error and
// how long it took. Key have must exist; new keys get suffix sfx.
func ops(st *Store, bigFile *os.File, have, sfx string) map[string]struct {
	err  error
	took time.Duration
} {
	ctx := context.Background()
	out := map[string]struct {
		err  error
		took time.Duration
	}{}
	run := func(name string, fn func() error) {
		began := time.Now()
		err := fn()
		out[name] = struct {
			err  error
			took time.Duration
		}{err, time.Since(began)}
	}
	run("put", func() error { return st.Put(ctx, "new"+sfx, strings.NewReader("new"), 3) })
	run("put big file", func() error {
		fi, _ := bigFile.Stat()
		bigFile.Seek(0, io.SeekStart)
		return st.Put(ctx, "new-big"+sfx, bigFile, fi.Size())
	})
	run("put big stream", func() error {
		data := objstoretest.Data(1, 20<<20)
		return st.Put(ctx, "new-big"+sfx, io.MultiReader(bytes.NewReader(data)), int64(len(data)))
	})
	run("get", func() error {
		rc, err := st.Get(ctx, have)
		if err == nil {
			_, err = io.ReadAll(rc)
			rc.Close()
		}
		return err
	})
	run("stat", func() error { _, err := st.Stat(ctx, have); return err })
	run("list", func() error { _, err := st.List(ctx, ""); return err })
	run("delete", func() error { return st.Delete(ctx, have) })
	return out
}

func bigFile(t *testing.T) *os.File {
	path := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(path, objstoretest.Data(2, 40<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestServerDown stops the server: every call fails, fast, with a wrapped
// "connection refused" naming the store; after Start the same Store works
// again and the objects are there.
func TestServerDown(t *testing.T) {
	srv := s3test.Start(t)
	st := open(t, configFor(srv, uniquePrefix())) // default retries and timeouts
	ctx := t.Context()
	if err := st.Put(ctx, "have", strings.NewReader("have"), 4); err != nil {
		t.Fatal(err)
	}
	big := bigFile(t)

	srv.Stop()
	for name, r := range ops(st, big, "have", "") {
		if !errors.Is(r.err, syscall.ECONNREFUSED) || !strings.HasPrefix(r.err.Error(), "s3store: ") || !strings.Contains(r.err.Error(), srv.Endpoint()) {
			t.Errorf("%s with the server down: got %v, want a wrapped connection refused naming %s", name, r.err, srv.Endpoint())
		}
		// 3 tries with up to 0.2 s and 0.4 s backoff: well under 3 s.
		if r.took > 3*time.Second {
			t.Errorf("%s with the server down took %v, want under 3s", name, r.took)
		}
		t.Logf("%s failed in %v", name, r.took.Round(time.Millisecond))
	}

	srv.Start()
	for name, r := range ops(st, big, "have", "") {
		if r.err != nil {
			t.Errorf("%s after the restart: %v", name, r.err)
		}
	}
	infos, err := st.List(ctx, "")
	if err != nil || !slices.Equal(keysOf(infos), []string{"new", "new-big"}) {
		t.Errorf("List after the restart: got %q, %v; want [new new-big]", keysOf(infos), err)
	}
}

// TestServerHung pauses the server: connections are accepted and requests
// buffered, but nothing answers. Every call must still fail within
// MaxRetries × IOTimeout plus backoff, with a timeout error, and work
// again after Resume.
func TestServerHung(t *testing.T) {
	srv := s3test.Start(t)
	cfg := configFor(srv, uniquePrefix())
	cfg.IOTimeout = time.Second
	cfg.MaxRetries = 2
	st := open(t, cfg)
	ctx := t.Context()
	if err := st.Put(ctx, "have", strings.NewReader("have"), 4); err != nil {
		t.Fatal(err)
	}
	big := bigFile(t)

	srv.Pause()
	for name, r := range ops(st, big, "have", "") {
		var ne net.Error
		if !errors.As(r.err, &ne) || !ne.Timeout() || !strings.HasPrefix(r.err.Error(), "s3store: ") {
			t.Errorf("%s with the server hung: got %v, want a wrapped timeout", name, r.err)
		}
		if r.took > 6*time.Second {
			t.Errorf("%s with the server hung took %v, want under 6s (2 tries of 1s, backoff)", name, r.took)
		}
		t.Logf("%s failed in %v", name, r.took.Round(time.Millisecond))
	}
	srv.Resume()
	// The paused server answers the requests it had buffered now (the
	// delete of "have" too), so check with keys of their own. The store
	// must work again; but a healthy server can take longer than the 1 s
	// IOTimeout to answer for a large part under load (weed under -race on
	// a busy 2-core machine), so a round whose only failures are timeouts
	// runs again, for up to a minute. Any other error fails the test.
	timedOut := func(err error) bool {
		var ne net.Error
		return errors.As(err, &ne) && ne.Timeout()
	}
	deadline := time.Now().Add(time.Minute)
	for round := 1; ; round++ {
		var slow []string
		if err := st.Put(ctx, "have2", strings.NewReader("have"), 4); err != nil {
			if !timedOut(err) {
				t.Fatalf("put after Resume: %v", err)
			}
			slow = append(slow, "put have2")
		} else {
			for name, r := range ops(st, big, "have2", "2") {
				switch {
				case r.err == nil:
				case timedOut(r.err):
					slow = append(slow, name)
				default:
					t.Errorf("%s after Resume: %v", name, r.err)
				}
			}
		}
		if len(slow) == 0 || t.Failed() {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("after Resume, %v still time out after %d rounds", slow, round)
			break
		}
		t.Logf("round %d after Resume: %v timed out (a slow server); again", round, slow)
	}
}

// TestReadStallsMidBody pauses the server while an object is being read:
// the read fails within IOTimeout instead of hanging.
func TestReadStallsMidBody(t *testing.T) {
	srv := s3test.Start(t)
	cfg := configFor(srv, uniquePrefix())
	// The object is written with the default IOTimeout: under load the
	// server may take over a second to answer for a part, which is not what
	// this test is about; it is read with a 1 s one.
	ctx := t.Context()
	data := objstoretest.Data(3, 64<<20) // more than the socket buffers hold
	if err := open(t, cfg).Put(ctx, "big", bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatal(err)
	}
	cfg.IOTimeout = time.Second
	st := open(t, cfg)
	rc, err := st.Get(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if _, err := io.ReadFull(rc, make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	srv.Pause()
	defer srv.Resume()
	began := time.Now()
	n, err := io.Copy(io.Discard, rc)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("reading on from a hung server: got %d bytes, %v; want a timeout", n, err)
	}
	if d := time.Since(began); d > 10*time.Second {
		t.Errorf("reading on from a hung server took %v", d)
	}
	t.Logf("read %d more bytes, then failed after %v: %v", n, time.Since(began).Round(time.Millisecond), err)
}

// TestTenSecondOutage keeps putting checkpoint-like objects while the
// server is down for 10 s: every call during the outage fails quickly,
// and puts succeed again soon after the server is back.
func TestTenSecondOutage(t *testing.T) {
	const outage = 10 * time.Second
	srv := s3test.Start(t)
	st := open(t, configFor(srv, uniquePrefix()))
	ctx := t.Context()
	n := 0
	put := func() (time.Duration, error) {
		n++
		data := objstoretest.Data(uint64(n), 256<<10)
		began := time.Now()
		err := st.Put(ctx, fmt.Sprintf("ckpt/%04d.sst", n), bytes.NewReader(data), int64(len(data)))
		return time.Since(began), err
	}
	if _, err := put(); err != nil {
		t.Fatal(err)
	}

	srv.Stop()
	down := time.Now()
	failures, slowest := 0, time.Duration(0)
	for time.Since(down) < outage {
		took, err := put()
		if err == nil {
			t.Fatalf("put %d succeeded with the server down", n)
		}
		failures++
		slowest = max(slowest, took)
	}
	if slowest > 3*time.Second {
		t.Errorf("slowest failing put took %v, want under 3s", slowest)
	}
	srv.Start()
	back := time.Now()
	sluicetest.WaitEvery(t, 30*time.Second, 100*time.Millisecond, "a put to succeed after the outage", func() bool {
		_, err := put()
		return err == nil
	})
	t.Logf("%d puts failed during the %v outage (slowest %v); puts work again %v after the restart returned",
		failures, outage, slowest.Round(time.Millisecond), time.Since(back).Round(time.Millisecond))
	infos, err := st.List(ctx, "ckpt/")
	if err != nil || len(infos) != 2 {
		t.Errorf("List: got %q, %v; want the put before and the one after the outage", keysOf(infos), err)
	}
}

func keysOf(infos []objstore.ObjectInfo) []string {
	var out []string
	for _, in := range infos {
		out = append(out, in.Key)
	}
	return out
}

// BenchmarkPut64MiB uploads a 64 MiB file (a large SST) to SeaweedFS on
// loopback: a multipart upload of four 16 MiB parts.
func BenchmarkPut64MiB(b *testing.B) {
	srv := s3test.Start(b)
	st := open(b, configFor(srv, uniquePrefix()))
	objstoretest.BenchmarkPut(b, st, 64<<20)
}

// BenchmarkPut64MiBStream is BenchmarkPut64MiB from a plain io.Reader:
// parts are buffered and uploaded one at a time.
func BenchmarkPut64MiBStream(b *testing.B) {
	srv := s3test.Start(b)
	st := open(b, configFor(srv, uniquePrefix()))
	data := objstoretest.Data(1, 64<<20)
	b.SetBytes(int64(len(data)))
	for i := 0; b.Loop(); i++ {
		if err := st.Put(b.Context(), fmt.Sprintf("bench/%d", i), io.MultiReader(bytes.NewReader(data)), int64(len(data))); err != nil {
			b.Fatal(err)
		}
	}
}
