package actors

import (
	"testing"
	"time"
)

// TestStrikes drives the failure accounting of one instance through the
// supervisor's and the instance's calls: what counts toward the restart
// policy, and when the backoff starts over.
func TestStrikes(t *testing.T) {
	const window = time.Minute
	t0 := time.Unix(1000, 0)
	type step struct {
		do     string // "fail", "failInit", "failPoll", "deadLetter N", "ok", "wait D"
		count  int    // after a failure: strikes within the window …
		fresh  bool   // … and whether the backoff starts over
		parked int    // after a dead letter: strikes parked in all
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"a poison record dead-lettered alone is pardoned", []step{
			{do: "fail", count: 1, fresh: true}, {do: "fail", count: 2}, {do: "fail", count: 3},
			{do: "deadLetter", parked: 3}, {do: "ok"},
			{do: "fail", count: 1, fresh: true}, {do: "fail", count: 2}, {do: "fail", count: 3},
			{do: "deadLetter", parked: 3}, {do: "ok"},
			{do: "fail", count: 1, fresh: true},
		}},
		{"records dead-lettered back to back add up", []step{
			{do: "fail", count: 1, fresh: true}, {do: "fail", count: 2}, {do: "deadLetter", parked: 2},
			{do: "fail", count: 3}, {do: "fail", count: 4}, {do: "deadLetter", parked: 4},
			{do: "fail", count: 5}, {do: "ok"},
			// The success pardons both records' strikes, not the one of
			// the record that then succeeded.
			{do: "fail", count: 2, fresh: true},
		}},
		{"a record that succeeds on retry counts", []step{
			{do: "fail", count: 1, fresh: true}, {do: "ok"},
			{do: "fail", count: 2, fresh: true}, {do: "ok"},
			{do: "fail", count: 3, fresh: true},
		}},
		{"Init failures are never parked", []step{
			{do: "fail", count: 1, fresh: true}, {do: "failInit", count: 2}, {do: "fail", count: 3},
			{do: "deadLetter", parked: 2}, {do: "ok"},
			{do: "failPoll", count: 2, fresh: true}, {do: "deadLetter"}, {do: "ok"},
			{do: "fail", count: 3, fresh: true},
		}},
		{"strikes leave the window", []step{
			{do: "fail", count: 1, fresh: true}, {do: "fail", count: 2},
			{do: "wait"},
			{do: "fail", count: 1, fresh: true},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			i := &instance{}
			now := t0
			attempts := 0
			for k, s := range c.steps {
				now = now.Add(time.Second)
				switch s.do {
				case "fail", "failInit", "failPoll":
					i.cur = work{kind: workRecord}
					if s.do == "failPoll" {
						i.cur.kind = workPoll
					}
					i.initing = s.do == "failInit"
					if s.do == "fail" {
						attempts++
					}
					i.failedAttempt()
					i.initing = false
					count, fresh := i.strike(now, window)
					if count != s.count || fresh != s.fresh {
						t.Fatalf("step %d (%s): %d strikes, fresh %v; want %d, %v", k, s.do, count, fresh, s.count, s.fresh)
					}
				case "deadLetter":
					i.park(attempts)
					attempts = 0
					parked := 0
					for _, st := range i.strikes {
						if st.parked {
							parked++
						}
					}
					if parked != s.parked {
						t.Fatalf("step %d: %d strikes parked, want %d", k, parked, s.parked)
					}
				case "ok":
					attempts = 0
					i.succeeded()
					for _, st := range i.strikes {
						if st.parked {
							t.Fatalf("step %d: a parked strike survived a success", k)
						}
					}
				case "wait":
					now = now.Add(window)
				}
			}
		})
	}
}
