package mesos_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/mesos"
	"github.com/sluicehq/sluice/mesos/mesosstatus"
	"github.com/sluicehq/sluice/mesos/mesostest"
)

// TestPendingReason: a task needing more cpus than any agent has stays
// pending, with the reason in the status (in memory, in Consul for
// `sluice status`, and over HTTP); other pools are not held up.
func TestPendingReason(t *testing.T) {
	e := newEnv(t, mesostest.AgentSpec{ID: "agent-1", CPUs: 4, Mem: 4096}, mesostest.AgentSpec{ID: "agent-2", CPUs: 4, Mem: 4096})
	big := shellPool("big", 1, "sleep 600", 3)
	big.CPUs = 8
	s := e.start(e.config("s1"), big, shellPool("small", 2, "sleep 600", 3))
	want := regexp.MustCompile(`^no offer with 8 cpus seen in \d+ s; largest offer: 4 cpus$`)
	sluicetest.WaitEvery(t, waitTimeout, 20*time.Millisecond, "the pending reason", func() bool {
		st := s.Status()
		return len(st.Pools) == 2 && st.Pools[1].Running == 2 && slices.ContainsFunc(pending(st), want.MatchString)
	})
	st := s.Status()
	if p := st.Pools[0]; p.Pending != 1 || p.Running != 0 || len(p.PendingReasons) != 1 || !want.MatchString(p.PendingReasons[0]) {
		t.Errorf("pool status = %+v", p)
	}
	if st.Tasks[0].State != "PENDING" || st.Tasks[0].ID != "" {
		t.Errorf("task status = %+v", st.Tasks[0])
	}
	sluicetest.WaitEvery(t, 10*time.Second, 20*time.Millisecond, "the reason in Consul", func() bool {
		st, err := e.readStatus()
		return err == nil && slices.ContainsFunc(pending(st), want.MatchString)
	})
	var hst mesosstatus.Status
	if err := getJSON("http://"+s.HTTPAddr()+"/v1/mesos/status", &hst); err != nil || !slices.ContainsFunc(pending(hst), want.MatchString) {
		t.Errorf("GET /v1/mesos/status: %v, %+v", err, hst.Tasks)
	}
	for _, tk := range e.master.Tasks() {
		if strings.HasPrefix(tk.ID, "big.") {
			t.Errorf("launched %s", tk.ID)
		}
	}
	// Offers are not suppressed while something is pending.
	if fw := e.master.Frameworks(); fw[0].Suppressed {
		t.Error("offers suppressed with a task pending")
	}
}

// TestMasterUnreachable: a master URL that does not answer is retried with
// backoff, and the error is in the status.
func TestMasterUnreachable(t *testing.T) {
	e := newEnv(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	cfg := e.config("s1")
	cfg.Master = dead
	s := e.start(cfg, shellPool("p", 1, "sleep 600", 3))
	sluicetest.WaitEvery(t, waitTimeout, 20*time.Millisecond, "the error in the status, retried", func() bool {
		st := s.Status()
		return st.Role == mesosstatus.RoleLeader && st.Subscription.Attempts >= 3 && st.Subscription.State != mesosstatus.Subscribed &&
			strings.Contains(st.Subscription.LastError, "connection refused")
	})
	st := s.Status()
	if r := pending(st); len(r) != 1 || !strings.HasPrefix(r[0], "not subscribed to the Mesos master (last error: ") {
		t.Errorf("pending = %q", r)
	}
	sluicetest.WaitEvery(t, 10*time.Second, 20*time.Millisecond, "the error in Consul", func() bool {
		st, err := e.readStatus()
		return err == nil && strings.Contains(st.Subscription.LastError, "connection refused")
	})
}

// TestRejectedSubscription: SUBSCRIBE refused with 401 (bad credentials)
// or with an ERROR event (not authorized) is retried with backoff and
// shown in the status; the scheduler subscribes once the master accepts.
func TestRejectedSubscription(t *testing.T) {
	e := newEnv(t, mesostest.AgentSpec{ID: "agent-1", CPUs: 2, Mem: 1024})
	e.master.RejectSubscribe(mesostest.SubscribeRejection{StatusCode: http.StatusUnauthorized, Message: "bad credentials"})
	cfg := e.config("s1")
	cfg.Principal, cfg.Secret = "sluice", "wrong"
	cfg.Roles = []string{"streams"}
	s := e.start(cfg, shellPool("p", 1, "sleep 600", 3))
	sluicetest.WaitEvery(t, waitTimeout, 20*time.Millisecond, "the 401 in the status", func() bool {
		st := s.Status()
		return st.Subscription.Attempts >= 2 && strings.Contains(st.Subscription.LastError, "not authenticated: bad credentials")
	})
	e.master.RejectSubscribe(mesostest.SubscribeRejection{Message: "Framework is not authorized"})
	sluicetest.WaitEvery(t, waitTimeout, 20*time.Millisecond, "the ERROR event in the status", func() bool {
		st := s.Status()
		return slices.ContainsFunc(st.Problems, func(p mesosstatus.Problem) bool {
			return p.Kind == mesosstatus.ProblemMaster && strings.Contains(p.Message, "Framework is not authorized")
		})
	})
	if len(e.master.Tasks()) != 0 {
		t.Fatal("launched without a subscription")
	}
	e.master.RejectSubscribe(mesostest.SubscribeRejection{})
	e.waitMaster(waitTimeout, "the task running", func() bool { return len(e.running()) == 1 })
	fw := e.master.Frameworks()
	if len(fw) != 1 || fw[0].Role != "streams" {
		t.Errorf("frameworks = %+v, want one with role streams", fw)
	}
}

// TestRefusedAccept: an ACCEPT the master refuses (400, 403) disconnects
// mesos-go's client; the scheduler resubscribes, reconciles the tasks of
// the refused call (unknown to the master), and launches them once the
// master accepts: never twice.
func TestRefusedAccept(t *testing.T) {
	for _, code := range []int{http.StatusBadRequest, http.StatusForbidden} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			e := newEnv(t, mesostest.AgentSpec{ID: "agent-1", CPUs: 2, Mem: 1024})
			peak := e.watchProcesses()
			e.master.FailAccept(code)
			s := e.start(e.config("s1"), shellPool("p", 2, "sleep 600", 0))
			sluicetest.WaitEvery(t, waitTimeout, 20*time.Millisecond, "refused ACCEPTs in the status", func() bool {
				st := s.Status()
				return st.Subscription.RefusedAccepts >= 2 && slices.ContainsFunc(st.Problems, func(p mesosstatus.Problem) bool {
					return p.Kind == mesosstatus.ProblemAccept
				})
			})
			if len(e.master.Tasks()) != 0 {
				t.Fatal("a refused ACCEPT launched tasks")
			}
			e.master.FailAccept(0)
			e.waitMaster(waitTimeout, "2 running tasks", func() bool { return len(e.running()) == 2 })
			sluicetest.WaitEvery(t, 10*time.Second, 20*time.Millisecond, "both confirmed", func() bool {
				st := s.Status()
				return st.Pools[0].Running == 2 && !st.Pools[0].Failed && st.Subscription.State == mesosstatus.Subscribed
			})
			if n := len(e.master.Tasks()); n != 2 || peak() != 2 {
				t.Errorf("%d tasks launched, peak %d processes; want 2 and 2", n, peak())
			}
		})
	}
}

// TestRescindedOffer: offers the master rescinds are counted and shown;
// launching goes on with later offers.
func TestRescindedOffer(t *testing.T) {
	e := newEnv(t, mesostest.AgentSpec{ID: "agent-1", CPUs: 2, Mem: 1024})
	big := shellPool("p", 1, "sleep 600", 3)
	big.CPUs = 4 // pending: every offer is declined, and comes back
	s := e.start(e.config("s1"), big)
	// The scheduler answers an offer within milliseconds: rescind each
	// one as soon as the master has made it, until one is rescinded
	// before the scheduler declined it.
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	for s.Status().Subscription.Rescinded == 0 {
		err := e.master.WaitUntil(ctx, func() bool {
			return len(e.master.Offers()) > 0 && e.master.RescindOffers() > 0 || s.Status().Subscription.Rescinded > 0
		})
		if err != nil {
			t.Fatalf("no offer rescinded: %v", err)
		}
	}
	st := s.Status()
	if !slices.ContainsFunc(st.Problems, func(p mesosstatus.Problem) bool { return p.Kind == mesosstatus.ProblemRescind }) {
		t.Errorf("problems = %+v", st.Problems)
	}
	fits := shellPool("p", 1, "sleep 600", 3)
	if err := s.SetPools([]mesos.Pool{fits}); err != nil {
		t.Fatal(err)
	}
	e.waitMaster(waitTimeout, "the task running", func() bool { return len(e.running()) == 1 })
	sluicetest.WaitEvery(t, 10*time.Second, 20*time.Millisecond, "the count in Consul", func() bool {
		st, err := e.readStatus()
		return err == nil && st.Subscription.Rescinded >= 1
	})
}
