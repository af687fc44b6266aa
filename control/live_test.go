package control_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/internal/testkinds"
	"github.com/sluicehq/sluice/persistence"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
)

// opStatus returns the runtime's status of one operator.
func opStatus(rt *node.Runtime, name string) node.OperatorStatus {
	for _, st := range rt.Status() {
		if st.Name == name {
			return st
		}
	}
	return node.OperatorStatus{}
}

// progress sums the records processed by name's running instances.
func progress(rt *node.Runtime, name string) int64 {
	var n int64
	for _, in := range opStatus(rt, name).Instances {
		if in.State == "running" {
			n += in.Processed
		}
	}
	return n
}

// produced sums the records produced by name's instances.
func produced(rt *node.Runtime, name string) int64 {
	var n int64
	for _, in := range opStatus(rt, name).Instances {
		n += in.Produced
	}
	return n
}

// counts reads every count of operator op from a stopped node's database.
func counts(t *testing.T, dir, op string) map[string]int64 {
	t.Helper()
	db, err := persistence.Open(dir, persistence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := map[string]int64{}
	err = db.NewStore(op).Scan(0, 256, nil, func(_ int, k, v []byte) error {
		n, err := testkinds.DecodeCount(v)
		out[string(k)] = n
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Deploying an operator leaves the running ones alone: they are not
// restarted or moved and keep processing. The figures (the new operator's
// first record, the existing one's longest pause) are logged; the bounds
// asserted are generous (a loaded 2-core CI machine schedules the test's
// own sampling late by hundreds of milliseconds) and catch a deploy that
// stops or restarts the others, which takes seconds.
func TestDeployDoesNotPauseOthers(t *testing.T) {
	rt, a := startEmbeddedRate(t, t.TempDir(), 0, 20000)
	sluicetest.WaitFor(t, 30*time.Second, "count to make progress", func() bool { return progress(rt, "count") > 5000 })

	type sample struct {
		at time.Time
		n  int64
	}
	var samples []sample
	deployAt, firstNew := time.Time{}, time.Time{}
	for start := time.Now(); time.Since(start) < 3*time.Second || (firstNew.IsZero() && time.Since(start) < 30*time.Second); {
		now := time.Now()
		samples = append(samples, sample{now, progress(rt, "count")})
		if deployAt.IsZero() && time.Since(start) > time.Second {
			deployAt = time.Now()
			var dr api.DeployResponse
			if code := a.do("POST", "/v1/operators", api.DeployRequest{Manifest: api.Manifest{Name: "count2", Kind: "count", Instances: 3}}, &dr); code != 201 {
				t.Fatalf("deploy count2 = %d", code)
			}
		}
		if !deployAt.IsZero() && firstNew.IsZero() && progress(rt, "count2") > 0 {
			firstNew = time.Now()
		}
		time.Sleep(5 * time.Millisecond) // sampling period
	}
	var maxGap time.Duration
	last := samples[0]
	for _, s := range samples[1:] {
		if s.n > last.n {
			last = s
		} else if gap := s.at.Sub(last.at); gap > maxGap {
			maxGap = gap
		}
	}
	if firstNew.IsZero() {
		t.Fatal("the new operator received nothing")
	}
	t.Logf("new operator's first record %v after the deploy; existing operator's longest pause %v", firstNew.Sub(deployAt).Round(time.Millisecond), maxGap.Round(time.Millisecond))
	if d := firstNew.Sub(deployAt); d > 10*time.Second {
		t.Errorf("new operator received its first record %v after the deploy, want ≤ 10s", d)
	}
	if maxGap > 2*time.Second {
		t.Errorf("existing operator paused for %v around the deploy, want ≤ 2s", maxGap)
	}
	for _, in := range opStatus(rt, "count").Instances {
		if in.Restarts != 0 || in.Epoch != 0 {
			t.Errorf("existing instance %+v restarted or moved", in)
		}
	}
}

// startEmbeddedRate runs gen (records, rate per s; 0 records: endless) and
// count(2) in dir with the control API.
func startEmbeddedRate(t *testing.T, dir string, records int64, rate float64) (*node.Runtime, client) {
	return startIn(t, dir, records, rate, nil)
}

// startIn is startEmbeddedRate deploying only the named operators at first
// start (nil: both).
func startIn(t *testing.T, dir string, records int64, rate float64, deploy []string) (*node.Runtime, client) {
	t.Helper()
	rt, err := node.Start(context.Background(), node.Config{NodeConfig: node.NodeConfig{DataDir: dir, NoSync: true, Logger: sluicetest.Logger(t)}, HTTP: "127.0.0.1:0", Deploy: deploy},
		testkinds.Gen(records, 1000, rate, 1), testkinds.CounterFactory(2, false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = rt.Stop(ctx)
	})
	return rt, client{t: t, base: "http://" + rt.HTTPAddr()}
}

func TestRescaleUnderLoadKeepsCountsExact(t *testing.T) {
	const records, keys = 1_000_000, 1000
	dir := t.TempDir()
	rt, a := startEmbeddedRate(t, dir, records, 150_000)
	for i, n := range []int{5, 1, 3} {
		at := int64(i+1) * records / 4
		sluicetest.WaitFor(t, 2*time.Minute, "progress before the rescale", func() bool { return produced(rt, "gen") >= at })
		var dr api.DeployResponse
		if code := a.do("PUT", "/v1/operators/count/instances", api.ScaleRequest{Instances: n}, &dr); code != 200 {
			t.Fatalf("scale to %d = %d", n, code)
		}
		t.Logf("scaled count to %d after %d records (epoch %d)", n, produced(rt, "gen"), dr.Operator.Epoch)
	}
	deadline := time.Now().Add(time.Minute)
	for produced(rt, "gen") < records {
		if time.Now().After(deadline) {
			p, _ := rt.Node().Pending(context.Background())
			t.Logf("stuck: produced %d, queued %d, buffered %d, pending %v", produced(rt, "gen"), rt.Node().Queued(), rt.Node().Buffered(), p)
			for _, st := range rt.Status() {
				for _, in := range st.Instances {
					t.Logf("  %s/%d.%d [%d,%d) %s processed=%d produced=%d", st.Name, in.Epoch, in.Index, in.FirstGroup, in.EndGroup, in.State, in.Processed, in.Produced)
				}
			}
			t.FailNow()
		}
		time.Sleep(10 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := rt.Stop(ctx); err != nil { // drains what is in flight
		t.Fatal(err)
	}
	got := counts(t, dir, "count")
	if len(got) != keys {
		t.Fatalf("%d keys counted, want %d", len(got), keys)
	}
	for k, n := range got {
		if n != records/keys {
			t.Fatalf("key %s counted %d, want %d", k, n, records/keys)
		}
	}
}

func TestKillKeepsStateRedeployResumesPurgeDeletes(t *testing.T) {
	dir := t.TempDir()
	rt, a := startIn(t, dir, 0, 0, []string{"count"})
	feed := func(n int) {
		for i := 0; i < n; i++ {
			sluicetest.Must(t, rt.Produce(context.Background(), testkinds.Words, sdk.Record{Key: []byte("k")}))
		}
	}
	feed(100)
	sluicetest.WaitFor(t, 10*time.Second, "100 counted", func() bool { return progress(rt, "count") == 100 })
	if code := a.do("DELETE", "/v1/operators/count", nil, nil); code != 200 {
		t.Fatalf("kill count = %d", code)
	}
	sluicetest.WaitFor(t, 10*time.Second, "count to stop", func() bool { return progress(rt, "count") == 0 })
	if err := rt.Produce(context.Background(), testkinds.Words, sdk.Record{Key: []byte("k")}); !errors.Is(err, sdk.ErrUnknownStream) {
		t.Fatalf("producing to a killed operator's input: %v, want ErrUnknownStream (nobody reads it)", err)
	}
	if code := a.do("POST", "/v1/operators", api.DeployRequest{Manifest: api.Manifest{Name: "count"}}, nil); code != 201 {
		t.Fatalf("redeploy count = %d", code)
	}
	// The redeployed operator resumes from its state: its instances'
	// processed counters (stored with the state) start at 100.
	sluicetest.WaitFor(t, 10*time.Second, "count to resume", func() bool { return progress(rt, "count") == 100 })
	feed(50)
	sluicetest.WaitFor(t, 10*time.Second, "150 counted", func() bool { return progress(rt, "count") == 150 })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sluicetest.Must(t, rt.Stop(ctx))
	if got := counts(t, dir, "count"); got["k"] != 150 {
		t.Fatalf("after kill and redeploy, k counted %d, want 150", got["k"])
	}

	rt, a = startIn(t, dir, 0, 0, []string{"count"})
	if code := a.do("DELETE", "/v1/operators/count?purge=1", nil, nil); code != 200 {
		t.Fatalf("kill --purge = %d", code)
	}
	sluicetest.Must(t, rt.Stop(ctx))
	// The purge is carried out as the node applies the change, or, if it
	// stopped first, when it starts again.
	rt, _ = startIn(t, dir, 0, 0, []string{"count"})
	sluicetest.Must(t, rt.Stop(ctx))
	if got := counts(t, dir, "count"); len(got) != 0 {
		t.Fatalf("after kill --purge the state still holds %v", got)
	}
}
