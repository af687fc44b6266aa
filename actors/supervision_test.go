package actors_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/actors"
	"github.com/sluicehq/sluice/actors/status"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/sdk"
)

// flaky counts records per key in state; it panics (or returns an error)
// on the records its fail function picks.
type flaky struct {
	policy core.RestartPolicy
	fail   func(rec core.Record, attempt int) error // nil: succeed; errPanic: panic
	tries  map[string]int                           // attempts per value, shared across incarnations
	inits  *atomic.Int64
	par    int
}

var errPanic = errors.New("panic please")

func (f *flaky) Metadata() core.Metadata {
	return core.Metadata{
		Name:        "flaky",
		Inputs:      []core.Input{{Stream: "in", Routing: core.GroupBy}},
		Outputs:     []string{"out"},
		Parallelism: max(f.par, 1),
		Restart:     f.policy,
	}
}

func (f *flaky) Init(core.Context) error {
	f.inits.Add(1)
	return nil
}

func (f *flaky) ProcessRecord(ctx core.Context, rec core.Record) error {
	n, err := sdk.GetInt64(ctx.State(), rec.Key)
	if err != nil {
		return err
	}
	// This write must be rolled back when the attempt fails.
	sdk.PutInt64(ctx.State(), rec.Key, n+1)
	if err := ctx.Produce("out", core.Record{Key: rec.Key, Value: []byte(strconv.FormatInt(n+1, 10))}); err != nil {
		return err
	}
	f.tries[string(rec.Value)]++
	if err := f.fail(rec, f.tries[string(rec.Value)]); err != nil {
		if err == errPanic {
			panic("boom on " + string(rec.Value))
		}
		return err
	}
	return nil
}

func (f *flaky) ProcessTimer(core.Context, string, time.Time) error { return nil }

// feed produces values 0..n-1 with key "k" from outside.
func feed(t *testing.T, n *actors.Node, stream string, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if err := n.Produce(context.Background(), stream, core.Record{Key: []byte("k"), Value: []byte(strconv.Itoa(i))}); err != nil {
			t.Fatal(err)
		}
	}
}

func instanceStatus(n *actors.Node, op string, idx int) status.InstanceStatus {
	for _, st := range n.Status() {
		if st.Name == op {
			return st.Instances[idx]
		}
	}
	return status.InstanceStatus{}
}

// startFlaky starts a node running f (with fresh inits and tries), a sink
// of its output and one of its dead letters, and the further operators.
func startFlaky(t *testing.T, f *flaky, more ...core.Factory) (n *actors.Node, out, dead *sluicetest.Collector) {
	t.Helper()
	f.inits, f.tries = &atomic.Int64{}, map[string]int{}
	out, dead = &sluicetest.Collector{}, &sluicetest.Collector{}
	ops := append([]core.Factory{
		func() core.Operator { g := *f; return &g },
		func() core.Operator {
			return &sluicetest.Sink{Name: "sink", Inputs: []core.Input{{Stream: "out"}}, Into: out}
		},
		func() core.Operator {
			return &sluicetest.Sink{Name: "dlq", Inputs: []core.Input{{Stream: "flaky.deadletter"}}, Into: dead}
		},
	}, more...)
	return startNode(t, t.TempDir(), ops...), out, dead
}

func TestPanicRestartsInstanceKeepsStateAndContinues(t *testing.T) {
	f := &flaky{fail: func(rec core.Record, attempt int) error {
		if string(rec.Value) == "5" && attempt == 1 {
			return errPanic // fails once, succeeds on retry
		}
		if string(rec.Value) == "8" && attempt <= 2 {
			return errors.New("transient") // an error restarts too
		}
		return nil
	}}
	n, out, dead := startFlaky(t, f)
	feed(t, n, "in", 0, 20)
	sluicetest.WaitFor(t, 10*time.Second, "20 outputs", func() bool { return out.Len() == 20 })
	// Every record produced exactly one output, and the counts run 1..20 in
	// order: failed attempts left neither state nor output behind.
	for i, d := range out.All() {
		if got, want := string(d.Record.Value), strconv.Itoa(i+1); got != want {
			t.Fatalf("output %d = %s, want %s", i, got, want)
		}
	}
	st := instanceStatus(n, "flaky", 0)
	if st.Restarts != 3 || st.State != "running" {
		t.Fatalf("status = %+v, want 3 restarts and running", st)
	}
	if f.inits.Load() != 4 {
		t.Fatalf("Init ran %d times, want 4 (start + 3 restarts)", f.inits.Load())
	}
	if dead.Len() != 0 {
		t.Fatalf("%d dead letters, want 0", dead.Len())
	}
}

func TestPoisonRecordGoesToDeadLetterAfterNAttempts(t *testing.T) {
	f := &flaky{policy: core.RestartPolicy{DeadLetterAfter: 4}, fail: func(rec core.Record, _ int) error {
		if string(rec.Value) == "3" {
			return errPanic
		}
		return nil
	}}
	n, out, dead := startFlaky(t, f)
	feed(t, n, "in", 0, 10)
	sluicetest.WaitFor(t, 10*time.Second, "9 outputs and 1 dead letter", func() bool { return out.Len() == 9 && dead.Len() == 1 })
	if f.tries["3"] != 4 {
		t.Fatalf("poison record tried %d times, want 4", f.tries["3"])
	}
	d := dead.All()[0].Record
	if string(d.Value) != "3" {
		t.Fatalf("dead letter value %q, want 3", d.Value)
	}
	for k, want := range map[string]string{
		core.HeaderAttempts: "4", core.HeaderOperator: "flaky", core.HeaderStream: "in", core.HeaderInstance: "0",
	} {
		if got, _ := d.Header(k); got != want {
			t.Errorf("dead letter header %s = %q, want %q", k, got, want)
		}
	}
	if e, _ := d.Header(core.HeaderError); !strings.Contains(e, "boom on 3") {
		t.Errorf("dead letter error header %q does not name the panic", e)
	}
	for i, o := range out.All() {
		if got, want := string(o.Record.Value), strconv.Itoa(i+1); got != want {
			t.Fatalf("output %d = %s, want %s (poison attempts must not count)", i, got, want)
		}
	}
	if st := instanceStatus(n, "flaky", 0); st.DeadLetters != 1 || st.Processed != 10 {
		t.Fatalf("status = %+v, want 1 dead letter and 10 processed", st)
	}
}

func TestExhaustedPolicyMarksInstanceFailedOthersKeepRunning(t *testing.T) {
	other := &sluicetest.Collector{}
	n, out, dead := startFlaky(t, &flaky{policy: core.RestartPolicy{MaxRestarts: 2, DeadLetterAfter: 100}, fail: func(rec core.Record, _ int) error {
		if string(rec.Value) == "1" {
			return errPanic
		}
		return nil
	}}, func() core.Operator {
		return &sluicetest.Sink{Name: "other", Inputs: []core.Input{{Stream: "in"}}, Into: other}
	})
	feed(t, n, "in", 0, 50)
	// 0 is processed; 1 fails three times (more than MaxRestarts=2), the
	// instance is marked failed and 1..49 go to the dead-letter stream.
	sluicetest.WaitFor(t, 10*time.Second, "49 dead letters", func() bool { return dead.Len() == 49 })
	sluicetest.WaitFor(t, 10*time.Second, "other operator saw all 50", func() bool { return other.Len() == 50 })
	// 0's output may still be on its way (it leaves with the next flush).
	sluicetest.WaitFor(t, 10*time.Second, "the output of record 0", func() bool { return out.Len() >= 1 })
	st := instanceStatus(n, "flaky", 0)
	if st.State != "failed" || !strings.Contains(st.FailedReason, "max restarts 2") {
		t.Fatalf("status = %+v, want failed with the policy in the reason", st)
	}
	if out.Len() != 1 {
		t.Fatalf("%d outputs, want 1", out.Len())
	}
	if e, _ := dead.All()[10].Record.Header(core.HeaderError); !strings.HasPrefix(e, "instance failed") {
		t.Fatalf("dead letter error %q, want instance failed", e)
	}
}

// TestProcessedCountsRecordsBeforeAFailureInTheirBatch: a failure in the
// middle of a batch restarts the instance at the failing record; the
// records before it were processed and count (issue 10: 1,212 processed
// for 4,414 produced by a 1:1 operator).
func TestProcessedCountsRecordsBeforeAFailureInTheirBatch(t *testing.T) {
	const records = 1000
	inits := &atomic.Int64{}
	tries := map[string]int{}
	out := &sluicetest.Collector{}
	n := startNode(t, t.TempDir(),
		func() core.Operator {
			return &sluicetest.Gen{Name: "gen", Stream: "in", Count: records, Batch: 100, Key: sluicetest.Key(10)}
		},
		func() core.Operator {
			return &flaky{inits: inits, tries: tries, fail: func(rec core.Record, attempt int) error {
				if v, _ := strconv.Atoi(string(rec.Value)); v%400 == 50 && attempt == 1 {
					return errors.New("fails once")
				}
				return nil
			}}
		},
		func() core.Operator {
			return &sluicetest.Sink{Name: "sink", Inputs: []core.Input{{Stream: "out"}}, Into: out}
		},
	)
	sluicetest.WaitFor(t, 30*time.Second, "every record out", func() bool { return out.Len() == records })
	st := instanceStatus(n, "flaky", 0)
	if st.Restarts == 0 {
		t.Fatal("no restart: the test did not fail any record")
	}
	sluicetest.WaitFor(t, 10*time.Second, fmt.Sprintf("processed to reach %d after %d restarts", records, st.Restarts), func() bool {
		return instanceStatus(n, "flaky", 0).Processed == records
	})
}
