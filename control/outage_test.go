package control_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/internal/s3test"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/internal/testkinds"
	"github.com/sluicehq/sluice/sdk/node"
)

// outageNode runs an exactly-once gen (records at rate per s) and
// count(2) in dir, with its checkpoints in store.
func outageNode(t *testing.T, dir, store string, records int64, rate float64) (*node.Runtime, client) {
	t.Helper()
	rt, err := node.Start(context.Background(), node.Config{
		NodeConfig: node.NodeConfig{DataDir: dir, NoSync: true, Logger: sluicetest.Logger(t)}, HTTP: "127.0.0.1:0",
		Checkpoints: store, CheckpointInterval: 200 * time.Millisecond},
		testkinds.Gen(records, 1000, rate, 1), testkinds.CounterFactory(2, false))
	sluicetest.Must(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = rt.Stop(ctx)
	})
	return rt, client{t: t, base: "http://" + rt.HTTPAddr()}
}

// checkpointsOf returns the status's checkpoint section.
func checkpointsOf(a client) api.CheckpointStatus {
	a.t.Helper()
	var st api.ClusterStatus
	if code := a.do("GET", "/v1/status", nil, &st); code != 200 || st.Checkpoints == nil {
		a.t.Fatalf("GET /v1/status = %d, checkpoints %+v", code, st.Checkpoints)
	}
	return *st.Checkpoints
}

// Issue 11: the checkpoint store (S3) goes away for 10 s mid-run.
// Processing goes on; the status shows the checkpoints failing and why;
// once the store is back, checkpoints complete again, and the counts are
// exact, in the node and restored from the store on a fresh node.
func TestStoreOutageMidRun(t *testing.T) {
	const (
		records = 120_000
		rate    = 2_000 // per s: a minute of input, the outage in its middle
		outage  = 10 * time.Second
	)
	s3 := s3test.Start(t)
	t.Setenv("AWS_ENDPOINT_URL_S3", s3.Endpoint())
	t.Setenv("AWS_ACCESS_KEY_ID", s3.AccessKey())
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3.SecretKey())
	t.Setenv("AWS_REGION", "us-east-1")
	store := "s3://" + s3.Bucket() + "/outage"

	dir := t.TempDir()
	rt, a := outageNode(t, dir, store, records, rate)
	sluicetest.WaitFor(t, time.Minute, "three checkpoints in S3", func() bool { return checkpointsOf(a).Completed >= 3 })

	s3.Stop()
	down := time.Now()
	before := checkpointsOf(a)
	counted := progress(rt, "count")
	t.Logf("S3 stopped: %d checkpoints complete, %d records counted", before.Completed, counted)
	var failing api.CheckpointStatus
	sluicetest.WaitFor(t, outage, "the status showing checkpoints failing", func() bool {
		failing = checkpointsOf(a)
		return failing.ConsecutiveFailures > 0 && failing.LastError != ""
	})
	t.Logf("status during the outage: %d failed in a row, the last at %s: %s", failing.ConsecutiveFailures,
		failing.LastFailure.UTC().Format(time.RFC3339), failing.LastError)
	if !strings.Contains(failing.LastError, "store unreachable: ") {
		t.Errorf("the last failure %q does not say the store failed", failing.LastError)
	}
	if failing.Last != before.Last {
		t.Errorf("checkpoint %d completed while the store was down (last before: %d)", failing.Last, before.Last)
	}
	sluicetest.WaitFor(t, outage, "records counted while the store is down", func() bool { return progress(rt, "count") > counted+rate })
	// The outage lasts its 10 s: this wait is the scenario, not
	// synchronisation.
	time.Sleep(time.Until(down.Add(outage)))
	during := progress(rt, "count") - counted
	t.Logf("%d records counted during the %v outage", during, outage)

	s3.Start() // waits until S3 accepts writes again
	t.Logf("S3 back after %v", time.Since(down).Round(time.Second))
	sluicetest.WaitFor(t, 2*time.Minute, "checkpoints completing again", func() bool {
		c := checkpointsOf(a)
		return c.Completed >= before.Completed+2 && c.ConsecutiveFailures == 0
	})
	after := checkpointsOf(a)
	t.Logf("after the outage: %d complete, %d failed, last %d", after.Completed, after.Failed, after.Last)
	sluicetest.WaitFor(t, 2*time.Minute, "every record counted", func() bool { return progress(rt, "count") == records })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sluicetest.Must(t, rt.Stop(ctx)) // a final checkpoint
	exact(t, counts(t, dir, "count"), records)

	// A fresh node restores the newest checkpoint from S3: exact too.
	dir2 := t.TempDir()
	rt2, _ := outageNode(t, dir2, store, records, rate)
	sluicetest.WaitFor(t, time.Minute, "the restored counter running", func() bool { return progress(rt2, "count") == records })
	sluicetest.Must(t, rt2.Stop(ctx))
	exact(t, counts(t, dir2, "count"), records)
}

// exact fails t unless every one of the 1000 keys counted records/1000.
func exact(t *testing.T, got map[string]int64, records int64) {
	t.Helper()
	var sum int64
	for k, n := range got {
		if n != records/1000 {
			t.Fatalf("key %s counted %d times, want %d", k, n, records/1000)
		}
		sum += n
	}
	if len(got) != 1000 || sum != records {
		t.Fatalf("%d keys, %d records counted; want 1000 keys, %d records", len(got), sum, records)
	}
}
