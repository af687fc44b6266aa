package clustertest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/cluster"
)

// DetectionBudget is the longest a crashed member may stay in snapshots
// after it stopped heartbeating.
const DetectionBudget = 5 * time.Second

// Timeout bounds every other wait of the suite (join, leave, watch).
const Timeout = 10 * time.Second

// Backend makes the nodes of one cluster under test.
type Backend interface {
	// NewNode returns a new, unjoined Discovery in the backend's cluster.
	// The backend calls Leave on it at the end of the test.
	NewNode(t testing.TB) cluster.Discovery
	// Crash makes d, which joined as member id, stop keeping its
	// membership alive without leaving, as if its process were killed.
	// It returns once d has stopped (no heartbeat is in flight).
	Crash(t testing.TB, d cluster.Discovery, id string)
}

// Member returns a test member with every field set: ID id, a loopback
// address derived from n, kinds given out of order and with a duplicate
// (a snapshot must normalize them), and metadata.
func Member(id string, n int) cluster.Member {
	return cluster.Member{
		ID:       id,
		Address:  fmt.Sprintf("127.0.0.1:%d", 20000+n),
		HTTPAddr: fmt.Sprintf("127.0.0.1:%d", 30000+n),
		Kinds:    []string{"window.tumbling", "source.kafka", "map", "source.kafka"},
		Version:  "0.1.0-test",
		Meta:     map[string]string{"zone": "z1", "node-index": fmt.Sprint(n)},
	}
}

// RunDiscoverySuite runs the conformance subtests, each on its own Backend
// from newBackend.
func RunDiscoverySuite(t *testing.T, newBackend func(t *testing.T) Backend) {
	tests := []struct {
		name string
		run  func(t *testing.T, b Backend)
	}{
		{"JoinWatchMetadata", testJoinWatchMetadata},
		{"SecondMemberJoins", testSecondMemberJoins},
		{"Leave", testLeave},
		{"Crash", testCrash},
		{"JoinContextEnd", testJoinContextEnd},
		{"SortedDeterministic", testSortedDeterministic},
		{"WatchContextEnd", testWatchContextEnd},
		{"JoinErrors", testJoinErrors},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newBackend(t)) })
	}
}

// join joins m for the rest of the test: the Join context is the test's,
// which ends just before the cleanups run.
func join(t testing.TB, d cluster.Discovery, m cluster.Member) {
	t.Helper()
	if err := d.Join(t.Context(), m); err != nil {
		t.Fatalf("Join(%s): %v", m.ID, err)
	}
}

func testJoinWatchMetadata(t *testing.T, b Backend) {
	a := b.NewNode(t)
	m := Member("a", 1)
	join(t, a, m)

	want := []cluster.Member{m.Normalize()}
	sameSnapshot := func(s []cluster.Member) bool { return reflect.DeepEqual(s, want) }
	observer := Watch(t, "observer", b.NewNode(t)) // watching without joining
	self := Watch(t, "a", a)
	for _, w := range []*Watcher{observer, self} {
		got := w.WaitFor(t, Timeout, fmt.Sprintf("exactly %+v", want), sameSnapshot)
		if !reflect.DeepEqual(got.Members, want) {
			t.Errorf("watcher %s: got %+v, want %+v", w.name, got.Members, want)
		}
	}
}

func testSecondMemberJoins(t *testing.T, b Backend) {
	a, c := b.NewNode(t), b.NewNode(t)
	join(t, a, Member("a", 1))
	wa := Watch(t, "a", a)
	wa.WaitIDs(t, Timeout, "a")

	join(t, c, Member("c", 2))
	wc := Watch(t, "c", c)
	for _, w := range []*Watcher{wa, wc} {
		got := w.WaitIDs(t, Timeout, "a", "c")
		want := []cluster.Member{Member("a", 1).Normalize(), Member("c", 2).Normalize()}
		if !reflect.DeepEqual(got.Members, want) {
			t.Errorf("watcher %s: got %+v, want %+v", w.name, got.Members, want)
		}
	}
}

func testLeave(t *testing.T, b Backend) {
	a, c := b.NewNode(t), b.NewNode(t)
	join(t, a, Member("a", 1))
	join(t, c, Member("c", 2))
	wa, wc := Watch(t, "a", a), Watch(t, "c", c)
	wc.WaitIDs(t, Timeout, "a", "c")
	wa.WaitIDs(t, Timeout, "a", "c")

	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	start := time.Now()
	if err := a.Leave(ctx); err != nil {
		t.Fatalf("Leave: %v", err)
	}
	wc.WaitIDs(t, Timeout, "c")
	t.Logf("leave seen by the other member after %v", time.Since(start).Round(time.Millisecond))

	wa.WaitClosed(t, Timeout) // Leave closes the leaver's watchers
	if err := a.Leave(ctx); err != nil {
		t.Errorf("second Leave: got %v, want nil", err)
	}
	if err := a.Join(ctx, Member("a", 1)); !errors.Is(err, cluster.ErrLeft) {
		t.Errorf("Join after Leave: got %v, want an error wrapping %v", err, cluster.ErrLeft)
	}
	if _, ok := <-a.Watch(ctx); ok {
		t.Errorf("Watch after Leave: got a snapshot, want a closed channel")
	}
}

func testCrash(t *testing.T, b Backend) {
	a, c := b.NewNode(t), b.NewNode(t)
	join(t, a, Member("a", 1))
	join(t, c, Member("c", 2))
	wc := Watch(t, "c", c)
	wc.WaitIDs(t, Timeout, "a", "c")

	start := time.Now()
	b.Crash(t, a, "a")
	got := wc.WaitIDs(t, DetectionBudget, "c")
	t.Logf("crash of a detected after %v (budget %v)", got.At.Sub(start).Round(time.Millisecond), DetectionBudget)
}

func testJoinContextEnd(t *testing.T, b Backend) {
	a, c := b.NewNode(t), b.NewNode(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := a.Join(ctx, Member("a", 1)); err != nil {
		t.Fatalf("Join: %v", err)
	}
	join(t, c, Member("c", 2))
	wc := Watch(t, "c", c)
	wc.WaitIDs(t, Timeout, "a", "c")

	start := time.Now()
	cancel()
	got := wc.WaitIDs(t, DetectionBudget, "c")
	t.Logf("end of a's Join context seen after %v", got.At.Sub(start).Round(time.Millisecond))
}

func testSortedDeterministic(t *testing.T, b Backend) {
	ids := []string{"n3", "n10", "n1", "n2", "a-first"}
	var nodes []cluster.Discovery
	for i, id := range ids {
		d := b.NewNode(t)
		join(t, d, Member(id, i))
		nodes = append(nodes, d)
	}
	w1 := Watch(t, "n3", nodes[0])
	w2 := Watch(t, "observer", b.NewNode(t))
	s1 := w1.WaitIDs(t, Timeout, ids...)
	s2 := w2.WaitIDs(t, Timeout, ids...)

	want := slices.Sorted(slices.Values(ids)) // byte order: "n10" before "n2"
	if got := IDs(s1.Members); !slices.Equal(got, want) {
		t.Errorf("IDs: got %v, want %v", got, want)
	}
	if !reflect.DeepEqual(s1.Members, s2.Members) {
		t.Errorf("two watchers disagree:\n got %+v\nwant %+v", s2.Members, s1.Members)
	}
	for i, id := range ids {
		m := s1.Members[slices.Index(want, id)]
		if wantM := Member(id, i).Normalize(); !reflect.DeepEqual(m, wantM) {
			t.Errorf("member %s: got %+v, want %+v", id, m, wantM)
		}
	}
	// A snapshot handed out must be the receiver's own copy.
	s1.Members[0].Kinds[0] = "mutated"
	s1.Members[0].Meta["zone"] = "mutated"
	join(t, b.NewNode(t), Member("z-last", 99))
	s3 := w1.WaitIDs(t, Timeout, append(ids, "z-last")...)
	if !reflect.DeepEqual(s3.Members[0], Member("a-first", 4).Normalize()) {
		t.Errorf("snapshots share memory: after mutating an old snapshot, got %+v", s3.Members[0])
	}
}

func testWatchContextEnd(t *testing.T, b Backend) {
	a := b.NewNode(t)
	join(t, a, Member("a", 1))
	w := Watch(t, "a", a)
	w.WaitIDs(t, Timeout, "a")
	w.Stop()
	w.WaitClosed(t, Timeout)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ch := a.Watch(ctx)
	select {
	case <-drain(ch):
	case <-time.After(Timeout):
		t.Errorf("Watch with an ended context: channel not closed within %v", Timeout)
	}
}

// drain forwards the end of ch: it skips snapshots and closes the
// returned channel when ch closes. Its goroutine ends with ch.
func drain(ch <-chan []cluster.Member) <-chan []cluster.Member {
	out := make(chan []cluster.Member)
	go func() {
		for range ch {
		}
		close(out)
	}()
	return out
}

func testJoinErrors(t *testing.T, b Backend) {
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()

	bad := []struct {
		name string
		m    cluster.Member
	}{
		{"empty ID", cluster.Member{Address: "127.0.0.1:1"}},
		{"ID with slash", cluster.Member{ID: "a/b", Address: "127.0.0.1:1"}},
		{"no port", cluster.Member{ID: "a", Address: "127.0.0.1"}},
		{"no host", cluster.Member{ID: "a", Address: ":8090"}},
		{"kind with comma", cluster.Member{ID: "a", Address: "127.0.0.1:1", Kinds: []string{"x,y"}}},
		{"reserved meta key", cluster.Member{ID: "a", Address: "127.0.0.1:1", Meta: map[string]string{cluster.ReservedMetaPrefix + "x": "1"}}},
	}
	for _, tc := range bad {
		if err := b.NewNode(t).Join(ctx, tc.m); !errors.Is(err, cluster.ErrInvalidMember) {
			t.Errorf("Join(%s): got %v, want an error wrapping %v", tc.name, err, cluster.ErrInvalidMember)
		}
	}

	a := b.NewNode(t)
	if err := a.Leave(ctx); err != nil {
		t.Errorf("Leave before Join: got %v, want nil", err)
	}
	a = b.NewNode(t)
	join(t, a, Member("a", 1))
	if err := a.Join(ctx, Member("a", 1)); !errors.Is(err, cluster.ErrAlreadyJoined) {
		t.Errorf("second Join: got %v, want an error wrapping %v", err, cluster.ErrAlreadyJoined)
	}
}
