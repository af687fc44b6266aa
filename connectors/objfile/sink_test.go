package objfile_test

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connectors/objfile"
	"github.com/sluicehq/sluice/internal/s3test"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/objstore"
	"github.com/sluicehq/sluice/objstore/fsstore"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/sdktest"
)

// dirOf returns the partition prefix of key ("" for none).
func dirOf(key string) string {
	if i := strings.LastIndexByte(key, '/'); i >= 0 {
		return key[:i+1]
	}
	return ""
}

func TestPartitionByEventHour(t *testing.T) {
	base := time.Date(2026, 12, 7, 10, 59, 0, 0, time.UTC)
	// Record i happens i*10 minutes after 10:59 UTC, in another zone.
	at := func(i int) time.Time {
		return base.Add(time.Duration(i) * 10 * time.Minute).In(time.FixedZone("x", 5*3600))
	}
	eachStore(t, func(t *testing.T, st objstore.Store) {
		h := newSink(t, objfile.SinkConfig{Store: st, Prefix: "events/", Partition: objfile.PartitionEventHour})
		send(t, h, 0, 14, at) // 10:59 .. 13:09
		sluicetest.Must(t, h.Checkpoint(1))
		sluicetest.Must(t, h.Complete(1))
		final, _ := objects(t, st)
		want := map[string][]string{}
		for i := range 14 {
			dir := "events/" + at(i).UTC().Format("dt=2006-01-02/hr=15/")
			want[dir] = append(want[dir], strconv.Itoa(i))
		}
		got := map[string][]string{}
		for _, k := range final {
			got[dirOf(k)] = append(got[dirOf(k)], lines(t, st, k)...)
		}
		if len(got) != 4 || len(want) != 4 {
			t.Fatalf("partitions %v, want 4: %v", got, want)
		}
		for dir, w := range want {
			if !slices.Equal(got[dir], w) {
				t.Errorf("partition %s holds %v, want %v", dir, got[dir], w)
			}
		}
		if _, ok := got["events/dt=2026-12-07/hr=10/"]; !ok {
			t.Errorf("no partition for 10:59 UTC: %v", final)
		}
	})
}

func TestPartitionByField(t *testing.T) {
	st, err := fsstore.Open(t.TempDir())
	sluicetest.Must(t, err)
	h := newSink(t, objfile.SinkConfig{Store: st, Partition: objfile.PartitionField, Field: "country"})
	for _, v := range []string{`{"country":"fr","n":1}`, `{"country":"de"}`, `{"country":"fr","n":2}`,
		`{"country":7}`, `{"country":"a/b"}`, `not json`, `{"other":1}`} {
		sluicetest.Must(t, h.Send("s", sdk.Record{Value: []byte(v)}))
	}
	sluicetest.Must(t, h.Checkpoint(1))
	sluicetest.Must(t, h.Complete(1))
	final, _ := objects(t, st)
	got := map[string][]string{}
	for _, k := range final {
		got[dirOf(k)] = append(got[dirOf(k)], lines(t, st, k)...)
	}
	want := map[string][]string{
		"country=fr/":          {`{"country":"fr","n":1}`, `{"country":"fr","n":2}`},
		"country=de/":          {`{"country":"de"}`},
		"country=7/":           {`{"country":7}`},
		"country=a_b/":         {`{"country":"a/b"}`},
		"country=__unknown__/": {`not json`, `{"other":1}`},
	}
	if len(got) != len(want) {
		t.Fatalf("partitions %v, want %v", got, want)
	}
	for dir, w := range want {
		if !slices.Equal(got[dir], w) {
			t.Errorf("partition %s holds %v, want %v", dir, got[dir], w)
		}
	}
}

func TestFilesRollAtRecordsAndBytes(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  objfile.SinkConfig
		want []int // records per file, in key order
	}{
		{"records", objfile.SinkConfig{RollRecords: 3}, []int{3, 3, 3, 1}},
		// Values "0".."9" are 2 bytes a line: a file rolls at its 4th.
		{"bytes", objfile.SinkConfig{RollBytes: 7}, []int{4, 4, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := fsstore.Open(t.TempDir())
			sluicetest.Must(t, err)
			tc.cfg.Store = st
			h := newSink(t, tc.cfg)
			send(t, h, 0, 10, nil)
			sluicetest.Must(t, h.Checkpoint(1))
			sluicetest.Must(t, h.Complete(1))
			final, _ := objects(t, st)
			var sizes []int
			var all []string
			for _, k := range final {
				l := lines(t, st, k)
				sizes = append(sizes, len(l))
				all = append(all, l...)
			}
			if !slices.Equal(sizes, tc.want) {
				t.Errorf("records per file %v, want %v (files %v)", sizes, tc.want, final)
			}
			var want []string
			for i := range 10 {
				want = append(want, strconv.Itoa(i))
			}
			if !slices.Equal(all, want) {
				t.Errorf("files in key order hold %v, want %v", all, want)
			}
		})
	}
}

func TestAtLeastOnceWritesAFilePerFlush(t *testing.T) {
	st, err := fsstore.Open(t.TempDir())
	sluicetest.Must(t, err)
	h := newSink(t, objfile.SinkConfig{Store: st}, sdktest.WithGuarantee(sdk.AtLeastOnce))
	send(t, h, 0, 5, nil)
	if final, _ := objects(t, st); len(final) != 0 {
		t.Fatalf("files before Flush: %v", final)
	}
	sluicetest.Must(t, h.Flush())
	send(t, h, 5, 8, nil)
	sluicetest.Must(t, h.Flush())
	sluicetest.Must(t, h.Flush()) // nothing new: no file
	final, pending := objects(t, st)
	if len(final) != 2 || len(pending) != 0 {
		t.Fatalf("files %v, pending %v; want 2 files", final, pending)
	}
	wantExactly(t, st, 0, 8)
}

// The S3 server stops mid-stream: the barrier and the commit fail while it
// is down and succeed once it is back, with every record once.
func TestS3OutageFailsTheCommitUntilTheServerIsBack(t *testing.T) {
	srv := s3test.Start(t)
	st := s3Store(t, srv)
	stats := new(objfile.Stats)
	h := newSink(t, objfile.SinkConfig{Store: st, RollRecords: 5, Stats: stats})

	send(t, h, 0, 10, nil)
	sluicetest.Must(t, h.Checkpoint(1))
	if stats.Down.Load() || stats.PendingFiles.Load() != 2 {
		t.Fatalf("before the outage: down %v, %d pending files; want up, 2", stats.Down.Load(), stats.PendingFiles.Load())
	}
	srv.Stop()
	send(t, h, 10, 20, nil)
	if err := h.Complete(1); err == nil {
		t.Fatal("Complete(1) succeeded with the S3 server stopped")
	}
	if err := h.Checkpoint(2); err == nil {
		t.Fatal("Checkpoint(2) succeeded with the S3 server stopped")
	}
	if !stats.Down.Load() || stats.Errors.Load() == 0 {
		t.Errorf("during the outage: down %v, %d errors; want down and errors", stats.Down.Load(), stats.Errors.Load())
	}
	send(t, h, 20, 25, nil) // the transaction stays open: the next barrier takes it
	srv.Start()
	sluicetest.Must(t, h.Complete(1))
	wantExactly(t, st, 0, 10)
	sluicetest.Must(t, h.Checkpoint(3))
	sluicetest.Must(t, h.Complete(3))
	wantExactly(t, st, 0, 25)
	if stats.Down.Load() || stats.Files.Load() != 5 {
		t.Errorf("after the outage: down %v, %d final files; want up, 5 (2 + 3 of 5 records)", stats.Down.Load(), stats.Files.Load())
	}
	if _, pending := objects(t, st); len(pending) != 0 {
		t.Errorf("pending files left: %v", pending)
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	st, err := fsstore.Open(t.TempDir())
	sluicetest.Must(t, err)
	for _, tc := range []struct {
		field string
		cfg   objfile.SinkConfig
	}{
		{"Name", objfile.SinkConfig{Stream: "s", Store: st}},
		{"Stream", objfile.SinkConfig{Name: "w", Store: st}},
		{"Store", objfile.SinkConfig{Name: "w", Stream: "s"}},
		{"Prefix", objfile.SinkConfig{Name: "w", Stream: "s", Store: st, Prefix: "out"}},
		{"PendingPrefix", objfile.SinkConfig{Name: "w", Stream: "s", Store: st, PendingPrefix: "p"}},
		{"Field", objfile.SinkConfig{Name: "w", Stream: "s", Store: st, Partition: objfile.PartitionField}},
		{"Field", objfile.SinkConfig{Name: "w", Stream: "s", Store: st, Partition: objfile.PartitionField, Field: "_x"}},
		{"Prefix", objfile.SinkConfig{Name: "w", Stream: "s", Store: st, Prefix: "a//"}},
		{"Partition", objfile.SinkConfig{Name: "w", Stream: "s", Store: st, Partition: 9}},
		{"RollBytes", objfile.SinkConfig{Name: "w", Stream: "s", Store: st, RollBytes: -1}},
		{"Format", objfile.SinkConfig{Name: "w", Stream: "s", Store: st, Format: 7}},
		{"Columns", objfile.SinkConfig{Name: "w", Stream: "s", Store: st, Format: objfile.FormatParquet}},
		{"Columns", objfile.SinkConfig{Name: "w", Stream: "s", Store: st, Columns: []objfile.Column{{Name: "a"}}}},
		{"Columns", objfile.SinkConfig{Name: "w", Stream: "s", Store: st, Format: objfile.FormatParquet,
			Columns: []objfile.Column{{Name: "a"}, {Name: "a", Type: objfile.ColumnInt64}}}},
		{"Columns", objfile.SinkConfig{Name: "w", Stream: "s", Store: st, Format: objfile.FormatParquet,
			Columns: []objfile.Column{{Name: "a", Type: 99}}}},
	} {
		t.Run(tc.field, func(t *testing.T) {
			_, err := objfile.NewSink(tc.cfg)
			if !errors.Is(err, objfile.ErrConfig) || !strings.Contains(err.Error(), tc.field) {
				t.Errorf("got %v, want an ErrConfig naming %s", err, tc.field)
			}
		})
	}
}
