package actors_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/actors"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/persistence"
	tpebble "github.com/sluicehq/sluice/topology/pebble"
)

// counter counts records per key in its state and notes which instance saw
// each key.
type counter struct {
	name        string
	input       string
	parallelism int
	owners      *owners
	total       *atomic.Int64 // records counted, across instances and nodes
}

type owners struct {
	mu       sync.Mutex
	byKey    map[string]int
	conflict []string
}

func (o *owners) see(key string, inst int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if prev, ok := o.byKey[key]; ok && prev != inst {
		o.conflict = append(o.conflict, fmt.Sprintf("%s on %d and %d", key, prev, inst))
	}
	o.byKey[key] = inst
}

func (c *counter) Metadata() core.Metadata {
	return core.Metadata{Name: c.name, Inputs: []core.Input{{Stream: c.input, Routing: core.GroupBy}}, Parallelism: c.parallelism}
}
func (c *counter) Init(core.Context) error { return nil }

// ProcessRecord adds one to the key's count. The stored value is the count
// (8 bytes) followed by the index of the instance that wrote it, so a key
// reaching a second instance is caught without any shared lock.
func (c *counter) ProcessRecord(ctx core.Context, rec core.Record) error {
	me := byte(ctx.Instance().Index)
	var n uint64
	if v, err := ctx.State().Get(rec.Key); err == nil {
		n = binary.BigEndian.Uint64(v)
		if v[8] != me && c.owners != nil {
			c.owners.see(string(rec.Key), int(v[8]))
			c.owners.see(string(rec.Key), int(me))
		}
	} else if err != core.ErrNotFound {
		return err
	}
	ctx.State().Set(rec.Key, append(binary.BigEndian.AppendUint64(nil, n+1), me))
	if c.total != nil {
		c.total.Add(1)
	}
	return nil
}
func (c *counter) ProcessTimer(core.Context, string, time.Time) error { return nil }

func processed(n *actors.Node, op string) int64 {
	var sum int64
	for _, st := range n.Status() {
		if st.Name == op {
			for _, in := range st.Instances {
				sum += in.Processed
			}
		}
	}
	return sum
}

func startNode(t *testing.T, dir string, ops ...core.Factory) *actors.Node {
	t.Helper()
	n, err := actors.Start(context.Background(), actors.Config{LocalStore: tpebble.Local, NodeID: "test", DataDir: dir, NoSync: true, Logger: sluicetest.Logger(t)}, ops...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Stop(context.Background()) })
	return n
}

func stop(t *testing.T, n *actors.Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.Stop(ctx); err != nil {
		t.Fatal(err)
	}
}

// readCounts opens dir's database and returns every counter value of op
// and the instance that last wrote it.
func readCounts(t *testing.T, dir, op string) (counts map[string]int64, owner map[string]int) {
	t.Helper()
	db, err := persistence.Open(dir, persistence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := make(map[string]int64)
	owner = make(map[string]int)
	err = db.NewStore(op).Scan(0, core.DefaultKeyGroups, nil, func(_ int, k, v []byte) error {
		out[string(k)] = int64(binary.BigEndian.Uint64(v))
		owner[string(k)] = int(v[8])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, owner
}

func TestGroupByAffinityAndExactCounts(t *testing.T) {
	records, keys := 1_000_000, 100_000
	if raceEnabled {
		records, keys = 200_000, 20_000 // the race detector's pace
	}
	dir := t.TempDir()
	own := &owners{byKey: make(map[string]int)}
	n := startNode(t, dir,
		func() core.Operator {
			return &sluicetest.Gen{Name: "gen", Stream: "words", Count: records, Key: sluicetest.Key(keys), Parallelism: 2}
		},
		func() core.Operator { return &counter{name: "count", input: "words", parallelism: 8, owners: own} },
	)
	sluicetest.WaitFor(t, 3*time.Minute, "every record counted", func() bool { return processed(n, "count") == int64(records) })
	stop(t, n)
	if len(own.conflict) > 0 {
		t.Fatalf("%d keys seen by two instances, e.g. %v", len(own.conflict), own.conflict[:min(5, len(own.conflict))])
	}
	counts, owner := readCounts(t, dir, "count")
	if len(counts) != keys {
		t.Fatalf("got %d keys in state, want %d", len(counts), keys)
	}
	for k, c := range counts {
		if c != int64(records/keys) {
			t.Fatalf("key %s counted %d, want %d", k, c, records/keys)
		}
	}
	perInstance := make([]int, 8)
	for _, inst := range owner {
		perInstance[inst]++
	}
	t.Logf("keys per instance: %v", perInstance)
}

func TestShuffleBalance(t *testing.T) {
	const records, par = 100_000, 8
	got := &sluicetest.Collector{}
	n := startNode(t, t.TempDir(),
		func() core.Operator {
			return &sluicetest.Gen{Name: "gen", Stream: "s", Count: records, Key: sluicetest.Key(10)}
		},
		func() core.Operator {
			return &sluicetest.Sink{Name: "sink", Inputs: []core.Input{{Stream: "s", Routing: core.Shuffle}}, Parallelism: par, Into: got}
		},
	)
	sluicetest.WaitFor(t, time.Minute, "all records delivered", func() bool { return got.Len() == records })
	stop(t, n)
	per := make([]int, par)
	for _, d := range got.All() {
		per[d.Instance]++
	}
	want := float64(records) / par
	for i, c := range per {
		if dev := math.Abs(float64(c)-want) / want; dev > 0.05 {
			t.Errorf("instance %d got %d records, want %.0f ±5%% (off by %.1f%%)", i, c, want, dev*100)
		}
	}
	t.Logf("per instance: %v", per)
}

func TestRoundRobinCyclesExactly(t *testing.T) {
	const records, par = 10_000, 7
	got := &sluicetest.Collector{}
	n := startNode(t, t.TempDir(),
		func() core.Operator {
			return &sluicetest.Gen{Name: "gen", Stream: "s", Count: records, Key: sluicetest.Key(3)}
		},
		func() core.Operator {
			return &sluicetest.Sink{Name: "sink", Inputs: []core.Input{{Stream: "s", Routing: core.RoundRobin}}, Parallelism: par, Into: got}
		},
	)
	sluicetest.WaitFor(t, time.Minute, "all records delivered", func() bool { return got.Len() == records })
	stop(t, n)
	for _, d := range got.All() {
		var i int
		fmt.Sscan(string(d.Record.Value), &i)
		if d.Instance != i%par {
			t.Fatalf("record %d went to instance %d, want %d (round robin)", i, d.Instance, i%par)
		}
	}
}

func TestBroadcastAndFanOutToSeveralOperators(t *testing.T) {
	const records, par = 5_000, 4
	bc, gb := &sluicetest.Collector{}, &sluicetest.Collector{}
	n := startNode(t, t.TempDir(),
		func() core.Operator {
			return &sluicetest.Gen{Name: "gen", Stream: "s", Count: records, Key: sluicetest.Key(100)}
		},
		func() core.Operator {
			return &sluicetest.Sink{Name: "everyone", Inputs: []core.Input{{Stream: "s", Routing: core.Broadcast}}, Parallelism: par, Into: bc}
		},
		func() core.Operator {
			return &sluicetest.Sink{Name: "keyed", Inputs: []core.Input{{Stream: "s", Routing: core.GroupBy}}, Parallelism: 3, Into: gb}
		},
	)
	sluicetest.WaitFor(t, time.Minute, "all deliveries", func() bool { return bc.Len() == records*par && gb.Len() == records })
	stop(t, n)
	seen := make(map[[2]int]int)
	for _, d := range bc.All() {
		var i int
		fmt.Sscan(string(d.Record.Value), &i)
		seen[[2]int{i, d.Instance}]++
	}
	for i := 0; i < records; i++ {
		for inst := 0; inst < par; inst++ {
			if seen[[2]int{i, inst}] != 1 {
				t.Fatalf("record %d reached broadcast instance %d %d times, want 1", i, inst, seen[[2]int{i, inst}])
			}
		}
	}
}

func TestGroupByPreservesOrderPerKey(t *testing.T) {
	const records = 20_000
	got := &sluicetest.Collector{}
	n := startNode(t, t.TempDir(),
		func() core.Operator {
			return &sluicetest.Gen{Name: "gen", Stream: "s", Count: records, Key: sluicetest.Key(50), Batch: 7}
		},
		func() core.Operator {
			return &sluicetest.Sink{Name: "keyed", Inputs: []core.Input{{Stream: "s", Routing: core.GroupBy}}, Parallelism: 5, Into: got}
		},
	)
	sluicetest.WaitFor(t, time.Minute, "all deliveries", func() bool { return got.Len() == records })
	stop(t, n)
	last := map[string]int{}
	for _, d := range got.All() {
		var i int
		fmt.Sscan(string(d.Record.Value), &i)
		k := string(d.Record.Key)
		if p, ok := last[k]; ok && p >= i {
			t.Fatalf("key %s: record %d arrived after %d", k, i, p)
		}
		last[k] = i
	}
}

// running counts op's running instances on n.
func running(n *actors.Node, op string) int {
	k := 0
	for _, st := range n.Status() {
		if st.Name == op {
			for _, in := range st.Instances {
				if in.State == "running" {
					k++
				}
			}
		}
	}
	return k
}
