package objfile_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connectors/objfile"
	"github.com/sluicehq/sluice/internal/s3test"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/objstore"
	"github.com/sluicehq/sluice/objstore/fsstore"
	"github.com/sluicehq/sluice/objstore/s3store"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/sdktest"
)

// s3Store returns a store on srv under a fresh prefix, failing fast when
// the server is down (one try per request, short timeouts).
func s3Store(t *testing.T, srv *s3test.Server) objstore.Store {
	t.Helper()
	st, err := s3store.Open(context.Background(), s3store.Config{
		Endpoint: srv.Endpoint(), Bucket: srv.Bucket(), Prefix: fmt.Sprintf("t%d/", prefixes.Add(1)),
		AccessKeyID: srv.AccessKey(), SecretAccessKey: srv.SecretKey(),
		MaxRetries: 1, IOTimeout: 5 * time.Second,
	})
	sluicetest.Must(t, err)
	return st
}

var prefixes atomic.Int64

// eachStore runs fn against a directory store and a store on a real
// SeaweedFS S3 server.
func eachStore(t *testing.T, fn func(t *testing.T, st objstore.Store)) {
	t.Run("fsstore", func(t *testing.T) {
		st, err := fsstore.Open(t.TempDir())
		sluicetest.Must(t, err)
		fn(t, st)
	})
	t.Run("s3", func(t *testing.T) {
		fn(t, s3Store(t, s3test.Start(t)))
	})
}

func newSink(t *testing.T, cfg objfile.SinkConfig, opts ...sdktest.Option) *sdktest.Harness {
	t.Helper()
	if cfg.Name == "" {
		cfg.Name, cfg.Stream = "write", "s"
	}
	f, err := objfile.NewSink(cfg)
	sluicetest.Must(t, err)
	h, err := sdktest.New(f, opts...)
	sluicetest.Must(t, err)
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// send sends records from..to-1, valued by their number, at event time
// at(i).
func send(t *testing.T, h *sdktest.Harness, from, to int, at func(i int) time.Time) {
	t.Helper()
	for i := from; i < to; i++ {
		rec := sdk.Record{Value: []byte(strconv.Itoa(i))}
		if at != nil {
			rec.EventTime = at(i)
		}
		sluicetest.Must(t, h.Send("s", rec))
	}
}

// objects returns the keys of st: the final ones and the pending ones.
func objects(t *testing.T, st objstore.Store) (final, pending []string) {
	t.Helper()
	objs, err := st.List(context.Background(), "")
	sluicetest.Must(t, err)
	for _, o := range objs {
		if strings.HasPrefix(o.Key, objfile.DefaultPendingPrefix) {
			pending = append(pending, o.Key)
		} else {
			final = append(final, o.Key)
		}
	}
	return final, pending
}

// lines returns the lines of the object under key.
func lines(t *testing.T, st objstore.Store, key string) []string {
	t.Helper()
	r, err := st.Get(context.Background(), key)
	sluicetest.Must(t, err)
	defer r.Close()
	b, err := io.ReadAll(r)
	sluicetest.Must(t, err)
	if len(b) > 0 && !bytes.HasSuffix(b, []byte("\n")) {
		t.Fatalf("object %s does not end in a newline: %q", key, b)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// finalCounts returns how many times each line is in the final objects.
func finalCounts(t *testing.T, st objstore.Store) map[string]int {
	t.Helper()
	final, _ := objects(t, st)
	counts := map[string]int{}
	for _, k := range final {
		for _, l := range lines(t, st, k) {
			counts[l]++
		}
	}
	return counts
}

// wantExactly fails t unless the final objects hold records from..to-1
// once each and nothing else.
func wantExactly(t *testing.T, st objstore.Store, from, to int) {
	t.Helper()
	counts := finalCounts(t, st)
	for i := from; i < to; i++ {
		if n := counts[strconv.Itoa(i)]; n != 1 {
			t.Errorf("record %d is %d times in the final objects, want once", i, n)
		}
		delete(counts, strconv.Itoa(i))
	}
	if len(counts) > 0 {
		t.Errorf("unexpected lines in the final objects: %v", counts)
	}
}
