package actors

import (
	"container/heap"
	"time"
)

// timerItem is one timer of an instance.
type timerItem struct {
	group int
	key   string
	at    time.Time
	gen   uint64 // matches timerQueue.live[...].gen while current
}

// timerOp is a timer change made by an attempt, applied to the in-memory
// queue only if the attempt succeeds (the store's copy is rolled back by
// the store itself).
type timerOp struct {
	group  int
	key    string
	at     time.Time
	delete bool
}

type timerID struct {
	group int
	key   string
}

// timerQueue is an instance's in-memory timers: the current timer per
// (key group, key) and a min-heap by due time with lazy deletion.
type timerQueue struct {
	live   map[timerID]timerItem
	h      timerHeap
	gen    uint64
	wake   *time.Timer
	wakeAt time.Time
}

func newTimerQueue() timerQueue {
	return timerQueue{live: make(map[timerID]timerItem)}
}

// set adds or replaces a timer.
func (q *timerQueue) set(group int, key string, at time.Time) {
	q.gen++
	t := timerItem{group: group, key: key, at: at, gen: q.gen}
	q.live[timerID{group, key}] = t
	heap.Push(&q.h, t)
}

// remove deletes a timer if present.
func (q *timerQueue) remove(group int, key string) {
	delete(q.live, timerID{group, key})
}

// apply performs the changes of a successful attempt.
func (q *timerQueue) apply(ops []timerOp) {
	for _, op := range ops {
		if op.delete {
			q.remove(op.group, op.key)
		} else {
			q.set(op.group, op.key, op.at)
		}
	}
}

// timerSetDuring reports whether ops (re)set the timer (group, key) last.
func timerSetDuring(ops []timerOp, group int, key string) bool {
	for j := len(ops) - 1; j >= 0; j-- {
		if ops[j].group == group && ops[j].key == key {
			return !ops[j].delete
		}
	}
	return false
}

// peek returns the earliest live timer.
func (q *timerQueue) peek() (timerItem, bool) {
	for len(q.h) > 0 {
		t := q.h[0]
		if cur, ok := q.live[timerID{t.group, t.key}]; ok && cur.gen == t.gen {
			return t, true
		}
		heap.Pop(&q.h)
	}
	return timerItem{}, false
}

// popDue removes and returns the earliest timer due at or before now.
func (q *timerQueue) popDue(now time.Time) (timerItem, bool) {
	t, ok := q.peek()
	if !ok || t.at.After(now) {
		return timerItem{}, false
	}
	heap.Pop(&q.h)
	delete(q.live, timerID{t.group, t.key})
	return t, true
}

// arm makes fire run when the earliest timer is due (at once if it is
// overdue), replacing an earlier arrangement for a different time.
func (q *timerQueue) arm(fire func()) {
	t, ok := q.peek()
	if !ok {
		return
	}
	if q.wake != nil && q.wakeAt.Equal(t.at) {
		return
	}
	if q.wake != nil {
		q.wake.Stop()
	}
	q.wakeAt = t.at
	q.wake = time.AfterFunc(time.Until(t.at), func() { fire() })
}

// fired notes that the wake-up ran, so that arm sets a new one.
func (q *timerQueue) fired() { q.wake = nil }

// stop cancels the pending wake-up.
func (q *timerQueue) stop() {
	if q.wake != nil {
		q.wake.Stop()
	}
}

// len returns the number of live timers.
func (q *timerQueue) len() int { return len(q.live) }

type timerHeap []timerItem

func (h timerHeap) Len() int           { return len(h) }
func (h timerHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h timerHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *timerHeap) Push(x any)        { *h = append(*h, x.(timerItem)) }
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	*h = old[:len(old)-1]
	return t
}
