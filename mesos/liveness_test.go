package mesos_test

import (
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mesos/mesos-go/api/v1/lib/scheduler"

	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/mesos"
	"github.com/sluicehq/sluice/mesos/mesosstatus"
	"github.com/sluicehq/sluice/mesos/mesostest"
)

// TestMissedHeartbeatsResubscribe: a subscription that goes silent, stalled
// (the master still thinks it is subscribed) or half-open (the master
// dropped it, the scheduler's connection was never closed), is ended by
// the scheduler after three missed heartbeats, and it subscribes again.
func TestMissedHeartbeatsResubscribe(t *testing.T) {
	for _, halfOpen := range []bool{false, true} {
		name := "stalled"
		if halfOpen {
			name = "half-open"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, mesostest.AgentSpec{ID: "agent-1", CPUs: 1, Mem: 512})
			s := e.start(e.config("s1"), shellPool("p", 1, "sleep 600", 3))
			var stream string
			sluicetest.WaitEvery(t, waitTimeout, 20*time.Millisecond, "subscribed with the task running", func() bool {
				fw := e.master.Frameworks()
				if len(fw) != 1 || !fw[0].Connected || s.Status().Pools[0].Running != 1 {
					return false
				}
				stream = fw[0].StreamID
				return true
			})
			fid := e.master.Frameworks()[0].ID
			silenced := time.Now()
			var err error
			if halfOpen {
				err = e.master.DropSubscriptionSilently(fid)
			} else {
				err = e.master.StallSubscription(fid)
			}
			if err != nil {
				t.Fatal(err)
			}
			e.waitMaster(20*time.Second, "a new subscription", func() bool {
				fw := e.master.Frameworks()
				return fw[0].Connected && fw[0].StreamID != stream
			})
			t.Logf("resubscribed %v after the subscription went silent (heartbeat 1 s)", time.Since(silenced).Round(time.Millisecond))
			sluicetest.WaitEvery(t, 10*time.Second, 20*time.Millisecond, "subscribed, the task confirmed", func() bool {
				st := s.Status()
				return st.Subscription.State == mesosstatus.Subscribed && st.Pools[0].Running == 1 && !st.Tasks[0].Unconfirmed
			})
			st := s.Status()
			if !slices.ContainsFunc(st.Problems, func(p mesosstatus.Problem) bool { return strings.Contains(p.Message, "no event from the master") }) {
				t.Errorf("missed heartbeats not among the problems: %+v", st.Problems)
			}
			if n := len(e.master.Tasks()); n != 1 {
				t.Errorf("%d tasks launched, want 1", n)
			}
		})
	}
}

// blackhole accepts connections and never answers, like a master behind a
// partition.
func blackhole(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return "http://" + ln.Addr().String()
}

// TestLeaderWithoutMasterStepsDown: the leader holds the Consul lock but
// reaches no master (its master URL leads into a partition); after
// MasterTimeout it steps down, and a standby that reaches the master takes
// over.
func TestLeaderWithoutMasterStepsDown(t *testing.T) {
	e := newEnv(t, mesostest.AgentSpec{ID: "agent-1", CPUs: 1, Mem: 512})
	cut := e.config("cut-off")
	cut.Master = blackhole(t)
	cut.CallTimeout = time.Second
	cut.MasterTimeout = 3 * time.Second
	s1 := e.start(cut, shellPool("p", 1, "sleep 600", 3))
	sluicetest.WaitEvery(t, waitTimeout, 20*time.Millisecond, "cut-off leading", func() bool {
		return s1.Status().Role == mesosstatus.RoleLeader
	})
	led := time.Now()
	s2 := e.start(e.config("connected"), shellPool("p", 1, "sleep 600", 3))
	sluicetest.WaitEvery(t, waitTimeout, 20*time.Millisecond, "the connected scheduler leading, the task running", func() bool {
		st := s2.Status()
		return st.Role == mesosstatus.RoleLeader && st.Subscription.State == mesosstatus.Subscribed && st.Pools[0].Running == 1
	})
	t.Logf("took over %v after the cut-off scheduler started leading", time.Since(led).Round(time.Millisecond))
	if st := s1.Status(); st.Role != mesosstatus.RoleStandby || !slices.ContainsFunc(st.Problems, func(p mesosstatus.Problem) bool {
		return strings.Contains(p.Message, mesos.ErrNoMaster.Error())
	}) {
		t.Errorf("cut-off scheduler: role %s, problems %+v; want a standby that says why", st.Role, st.Problems)
	}
}

// TestNoCallsWhileConsulUnreachable: the leader loses Consul (a partition:
// requests hang). Within its lease (SessionTTL/2 after Consul last
// confirmed its lock) it may still act; after that it sends the master no
// DECLINE, KILL or RECONCILE (nor anything else) although it reconciles
// every second and is asked to scale down, and after 2×SessionTTL it
// steps down. When Consul is back it leads again and does what it was
// asked.
func TestNoCallsWhileConsulUnreachable(t *testing.T) {
	e := newEnv(t, twoAgents()...)
	proxy := newFaultProxy(t, e.consul.Addr())
	cfg := e.config("s1")
	cfg.Consul = proxy.Addr()
	cfg.ReconcileInterval = time.Second
	s := e.start(cfg, shellPool("p", 2, "sleep 600", 3))
	sluicetest.WaitEvery(t, waitTimeout, 20*time.Millisecond, "two tasks running", func() bool {
		st := s.Status()
		return st.Subscription.State == mesosstatus.Subscribed && len(st.Pools) == 1 && st.Pools[0].Running == 2
	})
	fid := s.Status().FrameworkID
	lease := cfg.SessionTTL / 2
	cut := time.Now()
	proxy.Cut()
	// Scale down after the lease: the KILL must wait for Consul.
	e.waitMaster(2*lease, "the lease to run out", func() bool { return time.Since(cut) > lease+time.Second })
	if err := s.SetPools([]mesos.Pool{shellPool("p", 1, "sleep 600", 3)}); err != nil {
		t.Fatal(err)
	}
	// Watch the calls until the leader stepped down (its subscription is
	// closed) and a few seconds more.
	e.waitMaster(3*cfg.SessionTTL, "the leader stepping down", func() bool { return !e.master.Frameworks()[0].Connected })
	t.Logf("stepped down %v after Consul became unreachable", time.Since(cut).Round(time.Millisecond))
	quiet := time.Now()
	e.waitMaster(10*time.Second, "a few seconds without a leader", func() bool { return time.Since(quiet) > 3*time.Second })
	for _, c := range e.master.Calls() {
		if c.FrameworkID == fid && c.At.After(cut.Add(lease)) {
			t.Errorf("%s call %v after Consul became unreachable (lease %v)", c.Type, c.At.Sub(cut).Round(time.Millisecond), lease)
		}
	}
	if n := e.master.RunningProcesses(); n != 2 {
		t.Errorf("%d task processes while Consul is unreachable, want 2", n)
	}

	proxy.Restore()
	restored := time.Now()
	sluicetest.WaitEvery(t, 2*waitTimeout, 20*time.Millisecond, "leading again, scaled down", func() bool {
		st := s.Status()
		return st.Role == mesosstatus.RoleLeader && st.Subscription.State == mesosstatus.Subscribed &&
			st.Pools[0].Running == 1 && st.Pools[0].Killing == 0 && e.master.RunningProcesses() == 1
	})
	t.Logf("leading and scaled down %v after Consul came back", time.Since(restored).Round(time.Millisecond))
	kills := 0
	for _, c := range e.master.Calls() {
		if c.Type == scheduler.Call_KILL {
			kills++
		}
	}
	if kills == 0 {
		t.Error("no KILL after Consul came back")
	}
}
