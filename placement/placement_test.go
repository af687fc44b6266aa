package placement

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
)

func TestGroupRangeCoversAndMatchesInstanceFor(t *testing.T) {
	for _, tc := range []struct{ groups, par int }{
		{256, 1}, {256, 2}, {256, 3}, {256, 5}, {256, 8}, {256, 256}, {256, 300}, {7, 3}, {1, 1}, {32768, 17},
	} {
		t.Run(fmt.Sprintf("g%d_p%d", tc.groups, tc.par), func(t *testing.T) {
			next := 0
			for i := 0; i < tc.par; i++ {
				lo, hi := GroupRange(i, tc.groups, tc.par)
				if lo != next {
					t.Fatalf("instance %d: range starts at %d, want %d (adjacent to previous)", i, lo, next)
				}
				if hi < lo {
					t.Fatalf("instance %d: empty range inverted [%d,%d)", i, lo, hi)
				}
				for kg := lo; kg < hi; kg++ {
					if got := InstanceFor(kg, tc.groups, tc.par); got != i {
						t.Fatalf("InstanceFor(%d) = %d, want %d", kg, got, i)
					}
				}
				next = hi
			}
			if next != tc.groups {
				t.Fatalf("ranges cover [0,%d), want [0,%d)", next, tc.groups)
			}
		})
	}
}

func TestKeyGroupStableAndSpread(t *testing.T) {
	const groups = 256
	counts := make([]int, groups)
	for i := 0; i < 256_000; i++ {
		k := "key-" + strconv.Itoa(i)
		kg := KeyGroup([]byte(k), groups)
		if kg != KeyGroupString(k, groups) {
			t.Fatalf("KeyGroup and KeyGroupString disagree for %q", k)
		}
		counts[kg]++
	}
	for kg, c := range counts {
		if c < 800 || c > 1200 {
			t.Errorf("key group %d got %d keys, want 1000±200", kg, c)
		}
	}
}

func nodes(n int, kinds ...string) []Node {
	out := make([]Node, n)
	for i := range out {
		out[i] = Node{ID: "node-" + strconv.Itoa(i), Kinds: kinds}
	}
	return out
}

func instances(n int) []Instance {
	out := make([]Instance, n)
	for i := range out {
		out[i] = Instance{Operator: "op-" + strconv.Itoa(i%37), Kind: "k", Index: i / 37}
	}
	return out
}

func TestOwnerDeterministicAndOrderIndependent(t *testing.T) {
	ns := nodes(7, "k")
	insts := instances(1000)
	want := Assign(insts, ns)
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 5; trial++ {
		shuffled := append([]Node(nil), ns...)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		got := Assign(insts, shuffled)
		for inst, id := range want {
			if got[inst] != id {
				t.Fatalf("trial %d: %v placed on %s, want %s", trial, inst, got[inst], id)
			}
		}
	}
}

func TestOwnerMovementBounds(t *testing.T) {
	insts := instances(1000)
	for _, n := range []int{1, 2, 3, 4, 5, 8, 10, 16} {
		t.Run("join_to_"+strconv.Itoa(n), func(t *testing.T) {
			before := Assign(insts, nodes(n, "k"))
			after := Assign(insts, nodes(n+1, "k"))
			moved := 0
			for inst, id := range before {
				if after[inst] != id {
					moved++
					if after[inst] != "node-"+strconv.Itoa(n) {
						t.Fatalf("%v moved from %s to %s, want only moves to the new node", inst, id, after[inst])
					}
				}
			}
			limit := 1.5 / float64(n+1) * float64(len(insts))
			t.Logf("adding a node to %d moved %d of %d instances (limit %.0f)", n, moved, len(insts), limit)
			if float64(moved) > limit {
				t.Fatalf("moved %d instances, want ≤ %.0f", moved, limit)
			}
		})
		t.Run("leave_from_"+strconv.Itoa(n+1), func(t *testing.T) {
			all := nodes(n+1, "k")
			before := Assign(insts, all)
			gone := all[n/2].ID
			rest := append(append([]Node(nil), all[:n/2]...), all[n/2+1:]...)
			after := Assign(insts, rest)
			for inst, id := range before {
				if id != gone && after[inst] != id {
					t.Fatalf("%v moved from %s to %s though %s was removed", inst, id, after[inst], gone)
				}
				if id == gone && after[inst] == gone {
					t.Fatalf("%v still on removed node", inst)
				}
			}
		})
	}
}

func TestOwnerRespectsKinds(t *testing.T) {
	ns := []Node{{ID: "a", Kinds: []string{"x"}}, {ID: "b", Kinds: []string{"y"}}, {ID: "c", Kinds: []string{"x", "y"}}}
	for i := 0; i < 200; i++ {
		id, ok := Owner(Instance{Operator: "o", Kind: "y", Index: i}, ns)
		if !ok || id == "a" {
			t.Fatalf("instance %d of kind y placed on %q (ok=%v), want b or c", i, id, ok)
		}
	}
	if id, ok := Owner(Instance{Operator: "o", Kind: "z"}, ns); ok {
		t.Fatalf("kind z placed on %q, want no owner", id)
	}
}
