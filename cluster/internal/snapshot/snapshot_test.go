package snapshot

import (
	"slices"
	"testing"

	"github.com/sluicehq/sluice/cluster"
)

func TestMake(t *testing.T) {
	if got := Make(nil); got == nil || len(got) != 0 {
		t.Errorf("Make(nil): got %#v, want an empty non-nil slice", got)
	}
	in := []cluster.Member{{ID: "b", Kinds: []string{"y", "x"}}, {ID: "a"}}
	got := Make(in)
	if ids := []string{got[0].ID, got[1].ID}; !slices.Equal(ids, []string{"a", "b"}) {
		t.Errorf("order: got %v, want [a b]", ids)
	}
	if !slices.Equal(got[1].Kinds, []string{"x", "y"}) || in[0].Kinds[0] != "y" {
		t.Errorf("kinds: got %v (input %v), want a sorted copy", got[1].Kinds, in[0].Kinds)
	}
}

func TestPublishLatestWins(t *testing.T) {
	ch := New()
	for i := range 5 {
		Publish(ch, Make([]cluster.Member{{ID: string(rune('a' + i))}})) // never blocks
	}
	if got := <-ch; got[0].ID != "e" {
		t.Errorf("got %v, want the last snapshot [e]", got)
	}
	select {
	case s := <-ch:
		t.Errorf("stale snapshot left: %v", s)
	default:
	}
}

func TestEqual(t *testing.T) {
	a := Make([]cluster.Member{{ID: "a", Meta: map[string]string{"k": "v"}}})
	b := Make([]cluster.Member{{ID: "a", Meta: map[string]string{"k": "v"}}})
	c := Make([]cluster.Member{{ID: "a", Meta: map[string]string{"k": "w"}}})
	if !Equal(a, b) || Equal(a, c) || Equal(a, nil) {
		t.Errorf("Equal: got a=b %v, a=c %v, a=nil %v; want true false false", Equal(a, b), Equal(a, c), Equal(a, nil))
	}
}
