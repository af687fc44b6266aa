package mesos_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/mesos"
	"github.com/sluicehq/sluice/mesos/mesosstatus"
	"github.com/sluicehq/sluice/mesos/mesostest"
)

// TestMasterFailover runs the scheduler against three masters, configured
// with the URL of one that does not lead, or with all three: it follows
// the redirect to the leader. Then the leader fails over: the new leader answers 503 while it
// recovers, and one agent re-registers late, so the master does not answer
// about its task at first. The scheduler follows the old leader's redirect,
// waits out the 503s on the new leader, and keeps asking about the
// unanswered task with a truncated exponential backoff (1 s doubling, up to
// the default 30 s), so that every task is confirmed soon after its agent
// is back; nothing is launched again.
func TestMasterFailover(t *testing.T) {
	for _, tc := range []struct {
		name   string
		master func(urls []string) string
	}{
		{"one master that does not lead", func(urls []string) string { return urls[2] }},
		{"every master", func(urls []string) string { return strings.Join(urls, ",") }},
	} {
		t.Run(tc.name, func(t *testing.T) { testMasterFailover(t, tc.master) })
	}
}

func testMasterFailover(t *testing.T, master func(urls []string) string) {
	e := newEnvWith(t, mesostest.Config{Masters: 3, Agents: twoAgents()})
	peak := e.watchProcesses()
	urls := e.master.URLs()
	cfg := e.config("s1")
	cfg.Master = master(urls)
	cfg.ReconcileRetryMin, cfg.ReconcileRetry = time.Second, mesos.DefaultReconcileRetry
	s := e.start(cfg, shellPool("p", 2, "sleep 600", 3))
	endpoint := func(i int) string { return urls[i] + "/api/v1/scheduler" }

	sluicetest.WaitEvery(t, waitTimeout, 20*time.Millisecond, "two tasks running, subscribed at the leader", func() bool {
		st := s.Status()
		return st.Subscription.State == mesosstatus.Subscribed && st.Subscription.Leader == endpoint(0) &&
			len(st.Pools) == 1 && st.Pools[0].Running == 2
	})
	fid := s.Status().FrameworkID
	late := ""
	for _, tk := range e.running() {
		late = tk.AgentID
	}
	const recovery, lateBy = time.Second, 3 * time.Second
	failedOver := time.Now()
	if err := e.master.FailOver(mesostest.Failover{To: 1, Recovery: recovery, LateAgents: map[string]time.Duration{late: lateBy}}); err != nil {
		t.Fatal(err)
	}
	back := failedOver.Add(recovery + lateBy)
	sluicetest.WaitEvery(t, 30*time.Second, 20*time.Millisecond, "subscribed at the new leader with both tasks confirmed", func() bool {
		st := s.Status()
		if st.Subscription.State != mesosstatus.Subscribed || st.Subscription.Leader != endpoint(1) || st.Pools[0].Running != 2 {
			return false
		}
		for _, ts := range st.Tasks {
			if ts.Unconfirmed {
				return false
			}
		}
		return true
	})
	t.Logf("tasks confirmed %v after the failover, %v after the late agent re-registered",
		time.Since(failedOver).Round(time.Millisecond), time.Since(back).Round(time.Millisecond))
	// With 30 s between questions the answer would come up to 30 s late;
	// the backoff asks again 1, 2, 4, 8 s after subscribing.
	if d := time.Since(back); d > 10*time.Second {
		t.Errorf("the late agent's task was confirmed %v after the agent re-registered", d)
	}
	st := s.Status()
	if st.FrameworkID != fid || len(e.master.Tasks()) != 2 || peak() != 2 {
		t.Errorf("framework %s (want %s), %d tasks launched, peak %d processes; want no relaunch", st.FrameworkID, fid, len(e.master.Tasks()), peak())
	}
	unavailable := false
	for _, p := range st.Problems {
		unavailable = unavailable || strings.Contains(p.Message, "Master has not finished recovery")
	}
	if !unavailable {
		t.Errorf("the 503 of the recovering master is not among the problems: %+v", st.Problems)
	}
}
