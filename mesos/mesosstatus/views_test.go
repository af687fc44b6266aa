package mesosstatus_test

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/mesos/mesosstatus"
)

func TestViews(t *testing.T) {
	st := mesosstatus.Status{
		Master:       "http://m:5050",
		Subscription: mesosstatus.SubscriptionStatus{State: "subscribed"},
		Pools: []mesosstatus.PoolStatus{
			{Name: "big", Desired: 1, Pending: 1, PendingReasons: []string{"no offer with 8 cpus seen in 60 s; largest offer: 4 cpus"}},
			{Name: "bad", Failed: true, FailedReason: "Command exited with status 3"},
		},
		Tasks: []mesosstatus.TaskStatus{
			{Pool: "small", Instance: 0, ID: "small.0.ab", Agent: "a1", State: "TASK_RUNNING"},
			{Pool: "big", Instance: 0, State: "PENDING", Pending: "no offer with 8 cpus seen in 60 s; largest offer: 4 cpus"},
		},
	}
	launched, pending := mesosstatus.Views(st)
	if len(launched) != 2 || launched[0].State != "TASK_RUNNING" || launched[0].Where != "mesos agent a1" || !strings.Contains(launched[1].Message, "8 cpus") {
		t.Fatalf("launched = %+v", launched)
	}
	all := strings.Join(pending, "\n")
	for _, want := range []string{"mesos pool big: 1 pending: no offer with 8 cpus seen in 60 s; largest offer: 4 cpus", "mesos pool bad failed: Command exited with status 3"} {
		if !strings.Contains(all, want) {
			t.Errorf("pending lacks %q:\n%s", want, all)
		}
	}
}
