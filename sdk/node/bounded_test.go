package node_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connectors/file"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
)

// clicks produces n clicks, one per 10 ms of event time, over 3 users,
// then ends.
type clicks struct {
	n    int
	next int
}

var clicksBase = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func (c *clicks) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: "clicks", Outputs: []string{"clicks"},
		Watermarks: &sdk.WatermarkStrategy{OutOfOrderness: 50 * time.Millisecond}}
}

func (c *clicks) Init(ctx sdk.Context) error {
	n, err := sdk.GetInt64(ctx.State(), []byte("next"))
	c.next = int(n)
	return err
}

func (c *clicks) Poll(ctx sdk.Context) error {
	for k := 0; k < 100 && c.next < c.n; k++ {
		rec := sdk.Record{Key: []byte(fmt.Sprintf("u%d", c.next%3)), EventTime: clicksBase.Add(time.Duration(c.next) * 10 * time.Millisecond)}
		if err := ctx.Produce("clicks", rec); err != nil {
			return err
		}
		c.next++
	}
	sdk.PutInt64(ctx.State(), []byte("next"), int64(c.next))
	if c.next == c.n {
		return sdk.ErrEndOfStream
	}
	return nil
}

func (c *clicks) ResumesFromState()                                 {}
func (c *clicks) ProcessRecord(sdk.Context, sdk.Record) error       { return nil }
func (c *clicks) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

// perSecond counts clicks per user and second of event time, emitting
// "user second count" when the watermark passes the second.
type perSecond struct{}

func (perSecond) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: "per-second", Inputs: []sdk.Input{{Stream: "clicks", Routing: sdk.GroupBy}},
		Outputs: []string{"counts"}, Parallelism: 2}
}
func (perSecond) Init(sdk.Context) error { return nil }
func (perSecond) ProcessRecord(ctx sdk.Context, rec sdk.Record) error {
	end := rec.EventTime.Truncate(time.Second).Add(time.Second)
	k := string(rec.Key) + " " + strconv.FormatInt(end.Unix()-clicksBase.Unix(), 10)
	n, err := sdk.GetInt64(ctx.State(), []byte(k))
	if err != nil {
		return err
	}
	sdk.PutInt64(ctx.State(), []byte(k), n+1)
	return ctx.SetEventTimer(k, end)
}
func (perSecond) ProcessEventTimer(ctx sdk.Context, key string, _ time.Time) error {
	n, err := sdk.GetInt64(ctx.State(), []byte(key))
	if err != nil {
		return err
	}
	ctx.State().Delete([]byte(key))
	return ctx.Produce("counts", sdk.Record{Value: fmt.Appendf(nil, "%s %d", key, n)})
}
func (perSecond) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

// TestRunReturnsWhenBoundedStreamsFinish: a source that ends, an event-time
// window operator and an exactly-once file sink: Run returns by itself,
// with every window fired and the file complete (committed by the final
// checkpoint).
func TestRunReturnsWhenBoundedStreamsFinish(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "counts.txt")
	sink, err := file.NewSink(file.SinkConfig{Name: "out", Stream: "counts", Path: path})
	sluicetest.Must(t, err)
	const n = 1000 // 10 s of event time
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err = node.Run(ctx, node.Config{NodeConfig: node.NodeConfig{DataDir: filepath.Join(dir, "data"), NoSync: true, Logger: sluicetest.Logger(t)}, CheckpointInterval: 100 * time.Millisecond},
		func() sdk.Operator { return &clicks{n: n} }, func() sdk.Operator { return perSecond{} }, sink)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatal("Run returned only when its context ended, want when the streams finished")
	}
	var want []string
	for s := 1; s <= n/100; s++ {
		for u := range 3 {
			c := 0
			for i := (s - 1) * 100; i < s*100; i++ {
				if i%3 == u {
					c++
				}
			}
			want = append(want, fmt.Sprintf("u%d %d %d", u, s, c))
		}
	}
	// Under exactly-once the sink's committed output is its part files.
	parts, err := filepath.Glob(path + ".part-*")
	sluicetest.Must(t, err)
	var got []string
	for _, p := range parts {
		data, err := os.ReadFile(p)
		sluicetest.Must(t, err)
		got = append(got, strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")...)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("the file holds %d lines %q…, want the %d windows %q…", len(got), head(got), len(want), head(want))
	}
}

func head(s []string) []string { return s[:min(len(s), 4)] }
