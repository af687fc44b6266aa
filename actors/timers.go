package actors

import "time"

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
	q.h.push(t)
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
		q.h.pop()
	}
	return timerItem{}, false
}

// popDue removes and returns the earliest timer due at or before now.
func (q *timerQueue) popDue(now time.Time) (timerItem, bool) {
	t, ok := q.peek()
	if !ok || t.at.After(now) {
		return timerItem{}, false
	}
	q.h.pop()
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

// timerHeap is a min-heap of timers by due time. It is container/heap's
// algorithm on the concrete type: going through heap.Interface boxed every
// item pushed and popped (two allocations per timer that fires).
type timerHeap []timerItem

// push adds t.
func (h *timerHeap) push(t timerItem) {
	*h = append(*h, t)
	s := *h
	for j := len(s) - 1; j > 0; {
		i := (j - 1) / 2 // parent
		if !s[j].at.Before(s[i].at) {
			break
		}
		s[i], s[j] = s[j], s[i]
		j = i
	}
}

// pop removes the earliest timer (the heap must not be empty).
func (h *timerHeap) pop() {
	s := *h
	n := len(s) - 1
	s[0], s[n] = s[n], s[0]
	for i := 0; ; {
		j := 2*i + 1
		if j >= n {
			break
		}
		if j2 := j + 1; j2 < n && s[j2].at.Before(s[j].at) {
			j = j2
		}
		if !s[j].at.Before(s[i].at) {
			break
		}
		s[i], s[j] = s[j], s[i]
		i = j
	}
	s[n] = timerItem{} // drop its key string
	*h = s[:n]
}
