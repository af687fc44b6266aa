package actors

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestTimerQueueFiresInDueOrder drives the queue with random sets
// (replacing timers), removals and pops against a model: each pop must
// return a live timer with the earliest due time, and every live timer due
// by the end must come out exactly once.
func TestTimerQueueFiresInDueOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	q := newTimerQueue()
	model := map[timerID]time.Time{}
	base := time.Unix(1_000, 0)
	earliest := func(now time.Time) (time.Time, bool) {
		var min time.Time
		found := false
		for _, at := range model {
			if !at.After(now) && (!found || at.Before(min)) {
				min, found = at, true
			}
		}
		return min, found
	}
	pop := func(now time.Time) {
		t.Helper()
		want, due := earliest(now)
		got, ok := q.popDue(now)
		if ok != due {
			t.Fatalf("popDue(%v): ok = %v, want %v", now.Sub(base), ok, due)
		}
		if !ok {
			return
		}
		id := timerID{got.group, got.key}
		if at, live := model[id]; !live || !at.Equal(got.at) {
			t.Fatalf("popDue returned %v at %v: not a live timer (live at %v: %v)", id, got.at.Sub(base), at.Sub(base), live)
		}
		if !got.at.Equal(want) {
			t.Fatalf("popDue returned a timer due at %v, the earliest is due at %v", got.at.Sub(base), want.Sub(base))
		}
		delete(model, id)
	}
	for step := range 20_000 {
		id := timerID{group: rng.IntN(4), key: string(rune('a' + rng.IntN(26)))}
		at := base.Add(time.Duration(rng.IntN(1000)) * time.Millisecond)
		switch r := rng.IntN(10); {
		case r < 5:
			q.set(id.group, id.key, at)
			model[id] = at
		case r < 6:
			q.remove(id.group, id.key)
			delete(model, id)
		default:
			pop(base.Add(time.Duration(step%1000) * time.Millisecond))
		}
		if q.len() != len(model) {
			t.Fatalf("step %d: %d live timers, want %d", step, q.len(), len(model))
		}
	}
	for len(model) > 0 {
		pop(base.Add(time.Hour))
	}
	if _, ok := q.popDue(base.Add(time.Hour)); ok {
		t.Fatal("a timer came out of an empty queue")
	}
}
