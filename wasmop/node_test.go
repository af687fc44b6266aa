package wasmop_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
	"github.com/sluicehq/sluice/wasmop"
)

// TestNodeDeadLettersWhatKillsTheGuest runs the test guest in an
// embedded node: a record that panics the guest and one that loops are
// dead-lettered at once (one attempt each, the guest's message in
// sluice-error), every other record is counted exactly, and the instance
// keeps running.
func TestNodeDeadLettersWhatKillsTheGuest(t *testing.T) {
	h := newHost(t, wasmop.Config{CallTimeout: time.Second})
	m := load(t, h, testGuest)
	cfg := node.Config{NodeConfig: node.NodeConfig{DataDir: t.TempDir(), Logger: sluicetest.Logger(t), NoSync: true}}
	ctx := context.Background()
	rt, err := node.Start(ctx, cfg, m.Factory(testMeta()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := rt.Stop(sctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	out, err := rt.Subscribe(ctx, "out")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	dead, err := rt.Subscribe(ctx, sdk.DeadLetterStream("guest"))
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	const n = 60
	want := map[string]int{}
	for i := range n {
		rec := sdk.Record{Key: []byte("k" + strconv.Itoa(i%5))}
		switch i {
		case 17:
			rec.Value = []byte("panic")
		case 41:
			rec.Value = []byte("loop")
		default:
			want[string(rec.Key)]++
		}
		if err := rt.Produce(ctx, "in", rec); err != nil {
			t.Fatal(err)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for i := range 2 {
		rec, err := dead.Next(wctx)
		if err != nil {
			t.Fatalf("dead letter %d: %v", i, err)
		}
		msg, _ := rec.Header(sdk.HeaderError)
		attempts, _ := rec.Header(sdk.HeaderAttempts)
		says := map[string]string{"panic": "guest panics on", "loop": "deadline"}[string(rec.Value)]
		if says == "" || !strings.Contains(msg, says) || attempts != "1" {
			t.Errorf("dead letter %q: sluice-error %q, sluice-attempts %q; want it to say %q after 1 attempt", rec.Value, msg, attempts, says)
		}
	}
	got := map[string]int{}
	for range n - 2 {
		rec, err := out.Next(wctx)
		if err != nil {
			t.Fatalf("after %v: %v", got, err)
		}
		c, err := strconv.Atoi(string(rec.Value))
		if err != nil {
			t.Fatal(err)
		}
		got[string(rec.Key)] = max(got[string(rec.Key)], c)
	}
	for k, c := range want {
		if got[k] != c {
			t.Errorf("count of %s: got %d, want %d", k, got[k], c)
		}
	}
	for _, st := range rt.Status() {
		for _, in := range st.Instances {
			if in.State != "running" {
				t.Errorf("instance %d of %s is %s (%s), want running", in.Index, st.Name, in.State, in.LastError)
			}
		}
	}
	if r := m.Replaced(); r != 2 {
		t.Errorf("Replaced() = %d, want 2 guest instances replaced", r)
	}
}
