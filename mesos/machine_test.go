package mesos

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/httpcli/apierrors"
)

// Unit tests of the decision logic: no I/O, a fake clock.

// nodeIDRE is the node ID rule of the runtime; task IDs are node IDs.
var nodeIDRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

type harness struct {
	t   *testing.T
	m   *machine
	now time.Time
	seq int
}

func testConfig() machineConfig {
	return machineConfig{
		cluster: "c1", nodeConsul: "127.0.0.1:8500",
		killGrace: 5 * time.Second, launchSettle: 15 * time.Second,
		relaunchMin: time.Second, relaunchMax: 8 * time.Second,
		backoffReset:      10 * time.Minute,
		reconcileInterval: 5 * time.Minute, reconcileRetryMin: time.Second, reconcileRetry: 30 * time.Second,
		declineRefuse: 5 * time.Second, idleRefuse: 2 * time.Minute,
		pendingWindow: 60 * time.Second,
	}
}

func newHarness(t *testing.T, pools ...Pool) *harness {
	h := &harness{t: t, now: t0}
	h.m = newMachine(testConfig(), t0)
	h.m.newTaskID = func(pool string, slot int) string {
		h.seq++
		return fmt.Sprintf("%s.%d.t%d", pool, slot, h.seq)
	}
	h.m.members(t0, membership{}) // no node in the cluster
	h.m.setPools(h.now, pools)
	return h
}

func pool(name string, n int, cpus, mem float64, retries int) Pool {
	return Pool{Name: name, Instances: n, CPUs: cpus, Mem: mem, Retries: retries, Command: Command{Value: "./node"}}
}

func (h *harness) advance(d time.Duration) { h.now = h.now.Add(d) }

func (h *harness) subscribe() output {
	return h.m.subscribedEvent(h.now, "fw-1", 15*time.Second)
}

func scalarRes(name string, v float64) mesos.Resource {
	star := "*"
	return mesos.Resource{Name: name, Type: mesos.SCALAR.Enum(), Scalar: &mesos.Value_Scalar{Value: v}, Role: &star}
}

var offerSeq int

func portsRes(begin, end uint64) mesos.Resource {
	star := "*"
	return mesos.Resource{Name: "ports", Type: mesos.RANGES.Enum(), Role: &star,
		Ranges: &mesos.Value_Ranges{Range: []mesos.Value_Range{{Begin: begin, End: end}}}}
}

// offer is an offer of cpus, mem, disk and ports 31000-31099.
func offer(agent string, cpus, mem, disk float64) mesos.Offer {
	offerSeq++
	return mesos.Offer{
		ID: mesos.OfferID{Value: fmt.Sprintf("o%d", offerSeq)}, AgentID: mesos.AgentID{Value: agent}, Hostname: agent + ".example",
		Resources: []mesos.Resource{scalarRes("cpus", cpus), scalarRes("mem", mem), scalarRes("disk", disk), portsRes(31000, 31099)},
	}
}

func (h *harness) offers(os ...mesos.Offer) output { return h.m.offersEvent(h.now, os) }

func status(id, agent string, state mesos.TaskState, uuid bool) mesos.TaskStatus {
	st := mesos.TaskStatus{TaskID: mesos.TaskID{Value: id}, State: state.Enum(), AgentID: &mesos.AgentID{Value: agent}}
	if uuid {
		st.UUID = []byte("0123456789abcdef")
	}
	return st
}

func withReason(st mesos.TaskStatus, r mesos.TaskStatus_Reason, msg string) mesos.TaskStatus {
	st.Reason, st.Message = r.Enum(), &msg
	return st
}

func (h *harness) update(st mesos.TaskStatus) output { return h.m.update(h.now, st) }

// run launches tasks on the offers and reports them running.
func (h *harness) run(os ...mesos.Offer) []launchOp {
	out := h.offers(os...)
	for _, l := range out.launches {
		for _, ti := range l.tasks {
			h.update(status(ti.TaskID.Value, l.agentID, mesos.TASK_RUNNING, true))
		}
	}
	return out.launches
}

func launched(out output) []string {
	var ids []string
	for _, l := range out.launches {
		ids = append(ids, l.taskIDs()...)
	}
	return ids
}

func liveIDs(m *machine) []string {
	var ids []string
	for id, t := range m.tasks {
		if !t.terminal() {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

func TestOfferFitting(t *testing.T) {
	for _, tc := range []struct {
		name         string
		pool         Pool
		offers       []mesos.Offer
		wantLaunched int
		wantDeclined int
		wantRefuse   time.Duration
	}{
		{"fits", pool("p", 1, 1, 128, 3), []mesos.Offer{offer("a1", 2, 1024, 0)}, 1, 0, 2 * time.Minute},
		{"too few cpus", pool("p", 1, 4, 128, 3), []mesos.Offer{offer("a1", 2, 1024, 0)}, 0, 1, 5 * time.Second},
		{"too little mem", pool("p", 1, 1, 2048, 3), []mesos.Offer{offer("a1", 2, 1024, 0)}, 0, 1, 5 * time.Second},
		{"disk", func() Pool { p := pool("p", 1, 1, 128, 3); p.Disk = 100; return p }(), []mesos.Offer{offer("a1", 2, 1024, 50)}, 0, 1, 5 * time.Second},
		{"two per offer", pool("p", 2, 1, 512, 3), []mesos.Offer{offer("a1", 2, 1024, 0)}, 2, 0, 2 * time.Minute},
		{"only one of two fits", pool("p", 2, 1, 512, 3), []mesos.Offer{offer("a1", 1.5, 1024, 0)}, 1, 0, 5 * time.Second},
		{"exact fixed point", pool("p", 3, 0.1, 32, 3), []mesos.Offer{offer("a1", 0.3, 96, 0)}, 3, 0, 2 * time.Minute},
		{"unused offer declined", pool("p", 1, 1, 128, 3), []mesos.Offer{offer("a1", 2, 1024, 0), offer("a2", 2, 1024, 0)}, 1, 1, 2 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.pool)
			h.subscribe()
			out := h.offers(tc.offers...)
			if got := len(launched(out)); got != tc.wantLaunched {
				t.Fatalf("launched %d tasks, want %d", got, tc.wantLaunched)
			}
			declined := 0
			for _, d := range out.declines {
				declined += len(d.offerIDs)
				if d.refuse != tc.wantRefuse {
					t.Errorf("decline refuse = %v, want %v", d.refuse, tc.wantRefuse)
				}
			}
			for _, l := range out.launches {
				if l.refuse != tc.wantRefuse {
					t.Errorf("accept refuse = %v, want %v", l.refuse, tc.wantRefuse)
				}
			}
			if declined != tc.wantDeclined {
				t.Errorf("declined %d offers, want %d", declined, tc.wantDeclined)
			}
			if tc.wantLaunched > 0 && !h.m.dirty {
				t.Error("launch without persisting first")
			}
		})
	}
}

func TestSpreadAcrossAgents(t *testing.T) {
	h := newHarness(t, pool("p", 3, 1, 128, 3))
	h.subscribe()
	out := h.offers(offer("a1", 4, 4096, 0), offer("a2", 4, 4096, 0))
	perAgent := map[string]int{}
	for _, l := range out.launches {
		perAgent[l.agentID] += len(l.tasks)
	}
	if perAgent["a1"]+perAgent["a2"] != 3 || perAgent["a1"] == 0 || perAgent["a2"] == 0 {
		t.Fatalf("tasks per agent = %v, want 3 spread over both", perAgent)
	}
	// A relaunch goes to the agent with fewer tasks of the pool.
	lessLoaded := "a2"
	if perAgent["a1"] < perAgent["a2"] {
		lessLoaded = "a1"
	}
	var victim string
	for _, l := range out.launches {
		for _, ti := range l.tasks {
			h.update(status(ti.TaskID.Value, l.agentID, mesos.TASK_RUNNING, true))
			if l.agentID == lessLoaded {
				victim = ti.TaskID.Value
			}
		}
	}
	h.update(status(victim, lessLoaded, mesos.TASK_FAILED, true))
	h.advance(2 * time.Second)
	out = h.offers(offer("a1", 4, 4096, 0), offer("a2", 4, 4096, 0))
	if len(out.launches) != 1 || out.launches[0].agentID != lessLoaded {
		t.Fatalf("relaunch = %+v, want one on %s", out.launches, lessLoaded)
	}
}

func TestTaskResourcesFromOffer(t *testing.T) {
	h := newHarness(t, pool("p", 1, 0.3, 100, 3))
	h.subscribe()
	role, star := "sluice", "*"
	o := offer("a1", 0, 0, 0)
	o.Resources = []mesos.Resource{
		{Name: "cpus", Type: mesos.SCALAR.Enum(), Scalar: &mesos.Value_Scalar{Value: 0.1}, Role: &star, AllocationInfo: &mesos.Resource_AllocationInfo{Role: &role}},
		{Name: "cpus", Type: mesos.SCALAR.Enum(), Scalar: &mesos.Value_Scalar{Value: 0.2}, Role: &role, AllocationInfo: &mesos.Resource_AllocationInfo{Role: &role}},
		{Name: "mem", Type: mesos.SCALAR.Enum(), Scalar: &mesos.Value_Scalar{Value: 1000}, Role: &star, AllocationInfo: &mesos.Resource_AllocationInfo{Role: &role}},
		{Name: "ports", Type: mesos.RANGES.Enum(), Role: &star, AllocationInfo: &mesos.Resource_AllocationInfo{Role: &role},
			Ranges: &mesos.Value_Ranges{Range: []mesos.Value_Range{{Begin: 4000, End: 4000}, {Begin: 4002, End: 4010}}}},
		// A persistent volume is not plain disk.
		{Name: "disk", Type: mesos.SCALAR.Enum(), Scalar: &mesos.Value_Scalar{Value: 500}, Role: &role,
			Disk: &mesos.Resource_DiskInfo{Persistence: &mesos.Resource_DiskInfo_Persistence{ID: "v1"}}},
	}
	out := h.offers(o)
	if len(out.launches) != 1 {
		t.Fatalf("launches = %+v, want 1", out.launches)
	}
	rs := out.launches[0].tasks[0].Resources
	var got []string
	for _, r := range rs {
		v := fmt.Sprint(r.GetScalar().GetValue())
		if r.Ranges != nil {
			v = fmt.Sprint(r.Ranges.Range)
		}
		got = append(got, fmt.Sprintf("%s:%s(%s,%s)", r.Name, v, r.GetRole(), r.GetAllocationInfo().GetRole()))
	}
	want := []string{"cpus:0.2(sluice,sluice)", "cpus:0.1(*,sluice)", "mem:100(*,sluice)", "ports:[{4000 4000} {4002 4002}](*,sluice)"}
	if !slices.Equal(got, want) {
		t.Fatalf("task resources = %v, want %v (reserved first, roles and allocation info kept, no volume)", got, want)
	}
}

func TestBackoffAndRetriesExhausted(t *testing.T) {
	h := newHarness(t, pool("p", 1, 1, 128, 2))
	h.subscribe()
	wantDelays := []time.Duration{time.Second, 2 * time.Second}
	for i := 0; i < 3; i++ {
		ls := h.run(offer("a1", 2, 1024, 0))
		if len(ls) != 1 {
			t.Fatalf("attempt %d: launches = %+v, want 1", i, ls)
		}
		id := ls[0].taskIDs()[0]
		out := h.update(withReason(status(id, "a1", mesos.TASK_FAILED, true), mesos.REASON_COMMAND_EXECUTOR_FAILED, "Command exited with status 3"))
		if len(out.acks) != 1 {
			t.Errorf("attempt %d: %d acks, want 1", i, len(out.acks))
		}
		if i == 2 {
			break
		}
		s := h.m.slots[slotKey{"p", 0}]
		if got := s.nextLaunch.Sub(h.now); got != wantDelays[i] {
			t.Errorf("attempt %d: backoff %v, want %v", i, got, wantDelays[i])
		}
		// Offers during the backoff are declined.
		if out := h.offers(offer("a1", 2, 1024, 0)); len(out.launches) != 0 {
			t.Fatalf("attempt %d: launched during backoff", i)
		}
		if st := h.m.status(h.now); !strings.Contains(st.Tasks[0].Pending, "relaunch backoff") {
			t.Errorf("pending reason = %q, want the backoff", st.Tasks[0].Pending)
		}
		h.advance(wantDelays[i])
		h.m.tick(h.now)
	}
	ps := h.m.pools["p"]
	if !ps.failed || !strings.Contains(ps.failedReason, "Command exited with status 3") || !strings.Contains(ps.failedReason, "3 time(s)") {
		t.Fatalf("pool failed=%v reason=%q, want failed after 3 failures with the last message", ps.failed, ps.failedReason)
	}
	h.advance(time.Hour)
	if out := h.offers(offer("a1", 2, 1024, 0)); len(out.launches) != 0 {
		t.Fatal("a failed pool was relaunched")
	}
	st := h.m.status(h.now)
	if !st.Pools[0].Failed || st.Pools[0].Restarts != 3 {
		t.Errorf("pool status = %+v", st.Pools[0])
	}
	// A changed spec clears the failure.
	p := pool("p", 1, 1, 256, 2)
	h.m.setPools(h.now, []Pool{p})
	if out := h.offers(offer("a1", 2, 1024, 0)); len(out.launches) != 1 {
		t.Fatalf("after a new spec: launches = %+v, want 1", out.launches)
	}
}

func TestBackoffResetAfterLongRun(t *testing.T) {
	h := newHarness(t, pool("p", 1, 1, 128, 1))
	h.subscribe()
	for i := 0; i < 4; i++ {
		id := h.run(offer("a1", 2, 1024, 0))[0].taskIDs()[0]
		h.advance(11 * time.Minute) // longer than backoffReset
		h.update(status(id, "a1", mesos.TASK_FAILED, true))
		if h.m.pools["p"].failed {
			t.Fatalf("failure %d after a long run failed the pool", i+1)
		}
		if got := h.m.slots[slotKey{"p", 0}].nextLaunch.Sub(h.now); got != time.Second {
			t.Fatalf("backoff after a long run = %v, want the minimum", got)
		}
		h.advance(time.Second)
	}
}

func TestKillOnScaleDownNotRetried(t *testing.T) {
	h := newHarness(t, pool("p", 3, 1, 128, 3))
	h.subscribe()
	h.run(offer("a1", 4, 4096, 0))
	if n := len(liveIDs(h.m)); n != 3 {
		t.Fatalf("%d live tasks, want 3", n)
	}
	out := h.m.setPools(h.now, []Pool{pool("p", 1, 1, 128, 3)})
	if len(out.kills) != 2 {
		t.Fatalf("kills = %+v, want 2", out.kills)
	}
	for _, k := range out.kills {
		if k.taskID == "p.0.t1" {
			t.Errorf("killed instance 0")
		}
		h.update(status(k.taskID, "a1", mesos.TASK_KILLED, true))
	}
	h.advance(time.Minute)
	if out := h.offers(offer("a1", 4, 4096, 0)); len(out.launches) != 0 {
		t.Fatalf("killed tasks relaunched: %+v", out.launches)
	}
	st := h.m.status(h.now)
	if p := st.Pools[0]; p.Desired != 1 || p.Running != 1 || p.Restarts != 0 || p.Pending != 0 {
		t.Errorf("pool status = %+v", p)
	}
	// Removing the pool kills the rest.
	out = h.m.setPools(h.now, nil)
	if len(out.kills) != 1 {
		t.Fatalf("kills after removing the pool = %+v, want 1", out.kills)
	}
	h.update(status(out.kills[0].taskID, "a1", mesos.TASK_KILLED, true))
	if len(h.m.tasks) != 0 || len(h.m.slots) != 0 {
		t.Errorf("left over: tasks %v slots %v", h.m.tasks, h.m.slots)
	}
	// Unanswered kills are repeated.
}

func TestKillRepeatedUntilAnswered(t *testing.T) {
	h := newHarness(t, pool("p", 1, 1, 128, 3))
	h.subscribe()
	h.run(offer("a1", 4, 4096, 0))
	if out := h.m.setPools(h.now, nil); len(out.kills) != 1 {
		t.Fatalf("kills = %+v", out.kills)
	}
	h.advance(10 * time.Second)
	if out := h.m.tick(h.now); len(out.kills) != 0 {
		t.Fatalf("kill repeated too early")
	}
	h.advance(25 * time.Second)
	if out := h.m.tick(h.now); len(out.kills) != 1 {
		t.Fatalf("kill not repeated: %+v", out)
	}
}

func TestNoDuplicatesAfterTakeover(t *testing.T) {
	// Leader A launched three tasks, then died.
	a := newHarness(t, pool("p", 3, 1, 128, 3))
	a.subscribe()
	a.run(offer("a1", 2, 4096, 0), offer("a2", 2, 4096, 0))
	snap := a.m.snapshot()
	if len(snap.Tasks) != 3 {
		t.Fatalf("snapshot has %d tasks, want 3", len(snap.Tasks))
	}

	// Standby B takes over.
	b := newHarness(t)
	if err := b.m.restore(snap); err != nil {
		t.Fatal(err)
	}
	b.m.setPools(b.now, []Pool{pool("p", 3, 1, 128, 3)})
	out := b.subscribe()
	if len(out.reconcile) != 2 || len(out.reconcile[0].tasks) != 3 || len(out.reconcile[1].tasks) != 0 {
		t.Fatalf("reconcile after subscribing = %+v, want explicit (3 tasks) and implicit", out.reconcile)
	}
	if b.m.frameworkID != "fw-1" {
		t.Errorf("framework ID %q", b.m.frameworkID)
	}
	// Offers before the answers: nothing is launched.
	if out := b.offers(offer("a1", 4, 4096, 0), offer("a2", 4, 4096, 0)); len(out.launches) != 0 {
		t.Fatalf("launched before reconciliation: %v", launched(out))
	}
	if !out.suppress && !b.m.suppressed {
		t.Error("offers not suppressed while nothing is pending")
	}
	ids := liveIDs(b.m)
	// Two are running; the master never heard of the third.
	b.update(withReason(status(ids[0], "a1", mesos.TASK_RUNNING, false), mesos.REASON_RECONCILIATION, "Reconciliation: Latest task state"))
	b.update(withReason(status(ids[1], "a2", mesos.TASK_RUNNING, false), mesos.REASON_RECONCILIATION, "Reconciliation: Latest task state"))
	if out := b.offers(offer("a1", 4, 4096, 0)); len(out.launches) != 0 {
		t.Fatalf("launched while a task is unconfirmed: %v", launched(out))
	}
	lost := b.update(withReason(status(ids[2], "", mesos.TASK_LOST, false), mesos.REASON_RECONCILIATION, "Reconciliation: Task is unknown"))
	if len(lost.acks) != 0 {
		t.Error("acknowledged an update without uuid")
	}
	// The master did not know a task that had been running: a failure,
	// relaunched after the backoff.
	if lost.revive {
		t.Error("REVIVE during the backoff")
	}
	b.advance(time.Second)
	if out := b.m.tick(b.now); !out.revive {
		t.Error("no REVIVE when the slot became pending")
	}
	out = b.offers(offer("a1", 4, 4096, 0))
	if got := launched(out); len(got) != 1 || !strings.HasPrefix(got[0], strings.Join(strings.Split(ids[2], ".")[:2], ".")+".") {
		t.Fatalf("relaunch = %v, want one task for the slot of %s", got, ids[2])
	}
	if s := b.m.slots[mustSlot(t, ids[2])]; s.failures != 1 {
		t.Errorf("failures = %d, want 1", s.failures)
	}
}

func mustSlot(t *testing.T, id string) slotKey {
	k, ok := parseTaskID(id)
	if !ok {
		t.Fatalf("bad task ID %q", id)
	}
	return k
}

func TestUnknownTasksAdoptedOrKilled(t *testing.T) {
	h := newHarness(t, pool("p", 2, 1, 128, 3))
	h.subscribe()
	// Implicit reconciliation reports tasks the scheduler did not know.
	out := h.update(withReason(status("p.0.x1", "a1", mesos.TASK_RUNNING, false), mesos.REASON_RECONCILIATION, ""))
	if len(out.kills) != 0 {
		t.Fatalf("adoptable task killed")
	}
	out = h.update(withReason(status("p.0.x2", "a1", mesos.TASK_RUNNING, false), mesos.REASON_RECONCILIATION, ""))
	if len(out.kills) != 1 || out.kills[0].taskID != "p.0.x2" {
		t.Fatalf("duplicate of slot 0: kills = %+v", out.kills)
	}
	out = h.update(withReason(status("p.7.x3", "a1", mesos.TASK_RUNNING, false), mesos.REASON_RECONCILIATION, ""))
	if len(out.kills) != 1 || out.kills[0].taskID != "p.7.x3" {
		t.Fatalf("task beyond the pool: kills = %+v", out.kills)
	}
	out = h.update(withReason(status("foreign", "a1", mesos.TASK_RUNNING, false), mesos.REASON_RECONCILIATION, ""))
	if len(out.kills) != 1 || out.kills[0].taskID != "foreign" {
		t.Fatalf("foreign task: kills = %+v", out.kills)
	}
	// Slot 1 still needs a task; slot 0 does not.
	out = h.offers(offer("a1", 4, 4096, 0))
	if got := launched(out); len(got) != 1 || !strings.HasPrefix(got[0], "p.1.") {
		t.Fatalf("launched %v, want one task for slot 1", got)
	}
}

func TestSuppressAndRevive(t *testing.T) {
	h := newHarness(t, pool("p", 1, 1, 128, 3))
	out := h.subscribe()
	if out.suppress {
		t.Fatal("suppressed with a task pending")
	}
	h.run(offer("a1", 2, 1024, 0))
	if !h.m.suppressed {
		t.Fatal("not suppressed with nothing pending")
	}
	id := liveIDs(h.m)[0]
	out = h.update(status(id, "a1", mesos.TASK_FAILED, true))
	if out.revive {
		t.Fatal("revived during the backoff")
	}
	h.advance(500 * time.Millisecond)
	if out := h.m.tick(h.now); out.revive {
		t.Fatal("revived before the backoff ended")
	}
	h.advance(500 * time.Millisecond)
	if out := h.m.tick(h.now); !out.revive {
		t.Fatal("no REVIVE when the backoff ended")
	}
	// A slot that stays pending does not make the scheduler revive again
	// after every declined offer.
	h.offers(offer("a1", 0.5, 1024, 0))
	if out := h.m.tick(h.now); out.revive {
		t.Fatal("REVIVE repeated while the same slot stays pending")
	}
	// Scaling up revives (offers were declined since).
	if out := h.m.setPools(h.now, []Pool{pool("p", 2, 1, 128, 3)}); !out.revive {
		t.Fatal("no REVIVE after scaling up")
	}
}

func TestPendingReasonMessage(t *testing.T) {
	h := newHarness(t, pool("big", 1, 8, 128, 3))
	h.subscribe()
	if r := h.m.status(h.now).Tasks[0].Pending; r != "no offers received in 0 s" {
		t.Errorf("before offers: %q", r)
	}
	h.advance(5 * time.Second)
	h.offers(offer("a1", 4, 4096, 0), offer("a2", 2, 8192, 0))
	h.advance(70 * time.Second)
	h.offers(offer("a1", 4, 4096, 0))
	st := h.m.status(h.now)
	want := "no offer with 8 cpus seen in 60 s; largest offer: 4 cpus"
	if got := st.Tasks[0].Pending; got != want {
		t.Errorf("pending = %q, want %q", got, want)
	}
	if p := st.Pools[0]; p.Pending != 1 || len(p.PendingReasons) != 1 || p.PendingReasons[0] != want {
		t.Errorf("pool status = %+v", p)
	}
	h.m.disconnected(h.now, fmt.Errorf("connection refused"))
	if got := h.m.status(h.now).Tasks[0].Pending; !strings.Contains(got, "not subscribed") || !strings.Contains(got, "connection refused") {
		t.Errorf("pending while disconnected = %q", got)
	}
}

func TestPendingReasonTogether(t *testing.T) {
	h := newHarness(t, pool("p", 1, 2, 2048, 3))
	h.subscribe()
	h.offers(offer("a1", 4, 1024, 0), offer("a2", 1, 4096, 0))
	got := h.m.status(h.now).Tasks[0].Pending
	if !strings.Contains(got, "no offer with 2 cpus, 2048 MB mem, 0 MB disk and 2 ports together") {
		t.Errorf("pending = %q", got)
	}
}

func TestFailedAcceptIsReconciled(t *testing.T) {
	h := newHarness(t, pool("p", 1, 1, 128, 0))
	h.subscribe()
	out := h.offers(offer("a1", 2, 1024, 0))
	op := out.launches[0]
	h.m.launchFailed(h.now, op, apierrors.CodeMalformedRequest.Error("boom"))
	st := h.m.status(h.now)
	if st.Subscription.RefusedAccepts != 1 || !strings.Contains(st.Subscription.LastError, "boom") {
		t.Errorf("subscription status = %+v", st.Subscription)
	}
	// The subscription drops (httpsched) and comes back.
	h.m.disconnected(h.now, fmt.Errorf("stream closed"))
	h.advance(time.Second)
	out = h.subscribe()
	if len(out.reconcile) == 0 || len(out.reconcile[0].tasks) != 1 {
		t.Fatalf("reconcile = %+v, want the task of the failed ACCEPT", out.reconcile)
	}
	if out := h.offers(offer("a1", 2, 1024, 0)); len(out.launches) != 0 {
		t.Fatal("relaunched before the master answered")
	}
	id := op.taskIDs()[0]
	h.update(withReason(status(id, "", mesos.TASK_LOST, false), mesos.REASON_RECONCILIATION, "Reconciliation: Task is unknown"))
	if h.m.pools["p"].failed {
		t.Fatal("a launch that never happened failed the pool (retries 0)")
	}
	if got := launched(h.offers(offer("a1", 2, 1024, 0))); len(got) != 1 {
		t.Fatalf("relaunch = %v", got)
	}
}

func TestInvalidOfferRelaunchedWithoutFailure(t *testing.T) {
	h := newHarness(t, pool("p", 1, 1, 128, 0))
	h.subscribe()
	id := launched(h.offers(offer("a1", 2, 1024, 0)))[0]
	h.m.rescind(h.now, "o-x")
	h.update(withReason(status(id, "a1", mesos.TASK_LOST, false), mesos.REASON_INVALID_OFFERS, "Task launched with invalid offers"))
	if h.m.pools["p"].failed {
		t.Fatal("rescinded offer failed the pool")
	}
	if got := launched(h.offers(offer("a1", 2, 1024, 0))); len(got) != 1 {
		t.Fatalf("relaunch = %v", got)
	}
	if st := h.m.status(h.now); st.Subscription.Rescinded != 1 {
		t.Errorf("rescinded = %d", st.Subscription.Rescinded)
	}
}

func TestAgentLost(t *testing.T) {
	h := newHarness(t, pool("p", 2, 1, 128, 3))
	h.subscribe()
	h.run(offer("a1", 1, 1024, 0), offer("a2", 1, 1024, 0))
	out := h.m.failure(h.now, "a1", "")
	if len(out.reconcile) != 1 || len(out.reconcile[0].tasks) != 1 {
		t.Fatalf("reconcile on agent loss = %+v", out.reconcile)
	}
	var onA1 string
	for id := range out.reconcile[0].tasks {
		onA1 = id
	}
	h.update(withReason(status(onA1, "a1", mesos.TASK_LOST, false), mesos.REASON_AGENT_REMOVED, "Agent removed"))
	h.advance(time.Second)
	h.m.tick(h.now)
	ls := h.offers(offer("a2", 3, 1024, 0)).launches
	if len(ls) != 1 || ls[0].agentID != "a2" {
		t.Fatalf("relaunch = %+v, want one on a2", ls)
	}
}

func TestFrameworkRemoved(t *testing.T) {
	h := newHarness(t, pool("p", 1, 1, 128, 0))
	h.subscribe()
	h.run(offer("a1", 2, 1024, 0))
	h.m.errorEvent(h.now, "Framework has been removed")
	if h.m.frameworkID != "" || !h.m.dirty {
		t.Fatalf("framework ID %q kept after removal", h.m.frameworkID)
	}
	if h.m.pools["p"].failed || len(liveIDs(h.m)) != 0 {
		t.Fatal("tasks of a removed framework not relaunched as new")
	}
}

func TestPersistRoundTrip(t *testing.T) {
	h := newHarness(t, pool("p", 2, 1, 128, 0), pool("q", 1, 1, 128, 0))
	h.subscribe()
	h.run(offer("a1", 4, 4096, 0))
	for _, id := range liveIDs(h.m) {
		if strings.HasPrefix(id, "q.") {
			h.update(status(id, "a1", mesos.TASK_FAILED, true))
		}
	}
	if !h.m.pools["q"].failed {
		t.Fatal("q not failed")
	}
	snap := h.m.snapshot()
	b := newHarness(t)
	if err := b.m.restore(snap); err != nil {
		t.Fatal(err)
	}
	b.m.setPools(b.now, []Pool{pool("p", 2, 1, 128, 0), pool("q", 1, 1, 128, 0)})
	if got := b.m.snapshot(); string(got.marshal()) != string(snap.marshal()) {
		t.Errorf("snapshot after restore:\n%s\nwant\n%s", got.marshal(), snap.marshal())
	}
	if !b.m.pools["q"].failed {
		t.Error("failed pool forgotten by the next leader")
	}
	for _, tk := range b.m.tasks {
		if tk.confirmed {
			t.Errorf("restored task %s confirmed before reconciliation", tk.id)
		}
	}
}

func TestParseTaskID(t *testing.T) {
	for _, tc := range []struct {
		id   string
		want slotKey
		ok   bool
	}{
		{"count.2.abc", slotKey{"count", 2}, true},
		{randomTaskID("p-1_x", 10), slotKey{"p-1_x", 10}, true},
		{"count.02.abc", slotKey{}, false},
		{"count.-1.abc", slotKey{}, false},
		{"count.2", slotKey{}, false},
		{"a.b.c.d", slotKey{}, false},
		{"", slotKey{}, false},
	} {
		got, ok := parseTaskID(tc.id)
		if ok != tc.ok || got != tc.want {
			t.Errorf("parseTaskID(%q) = %v, %v, want %v, %v", tc.id, got, ok, tc.want, tc.ok)
		}
	}
}

func TestTaskInfo(t *testing.T) {
	p := Pool{Name: "p", Instances: 1, CPUs: 1, Mem: 128, Command: Command{Value: "./node", Args: []string{"-v"}},
		URIs: []URI{{Value: "/bin/node", Executable: true}}, Env: map[string]string{"A": "1"}, DataDir: "vol/data"}
	h := newHarness(t, p)
	h.subscribe()
	ti := h.offers(offer("a1", 2, 1024, 0)).launches[0].tasks[0]
	c := ti.Command
	if c.GetShell() || c.GetValue() != "./node" || !slices.Equal(c.Arguments, []string{"./node", "-v"}) {
		t.Errorf("command = %v", c)
	}
	if len(c.URIs) != 1 || !c.URIs[0].GetExecutable() || c.URIs[0].Value != "/bin/node" {
		t.Errorf("uris = %v", c.URIs)
	}
	env := map[string]string{}
	for _, v := range c.Environment.Variables {
		env[v.Name] = v.GetValue()
	}
	want := map[string]string{"A": "1", "SLUICE_CLUSTER": "c1", "SLUICE_CONSUL": "127.0.0.1:8500", "HOST": "a1.example", "SLUICE_DATA_DIR": "vol/data",
		"SLUICE_BIND": "a1.example:31000", "SLUICE_ADVERTISE": "a1.example:31000", "SLUICE_HTTP": "a1.example:31001"}
	if fmt.Sprint(env) != fmt.Sprint(want) {
		t.Errorf("env = %v, want %v", env, want)
	}
	if ti.KillPolicy.GracePeriod.Nanoseconds != int64(5*time.Second) {
		t.Errorf("kill policy = %v", ti.KillPolicy)
	}
	for _, id := range []string{ti.TaskID.Value, randomTaskID(strings.Repeat("p", 64), 9999)} {
		if !nodeIDRE.MatchString(id) {
			t.Errorf("task ID %q is not a valid node ID", id)
		}
	}
}

func TestNothingKilledBeforePoolsAreKnown(t *testing.T) {
	a := newHarness(t, pool("p", 2, 1, 128, 3))
	a.subscribe()
	a.run(offer("a1", 4, 4096, 0))
	// A scheduler started without its pools takes over.
	m := newMachine(testConfig(), t0)
	if err := m.restore(a.m.snapshot()); err != nil {
		t.Fatal(err)
	}
	out := m.subscribedEvent(t0, "fw-1", time.Second)
	for _, id := range liveIDs(m) {
		o := m.update(t0, withReason(status(id, "a1", mesos.TASK_RUNNING, false), mesos.REASON_RECONCILIATION, ""))
		out.kills = append(out.kills, o.kills...)
	}
	o := m.update(t0, withReason(status("q.0.x", "a1", mesos.TASK_RUNNING, false), mesos.REASON_RECONCILIATION, ""))
	out.kills = append(out.kills, o.kills...)
	o = m.offersEvent(t0, []mesos.Offer{offer("a1", 4, 4096, 0)})
	if len(out.kills)+len(o.kills) != 0 || len(o.launches) != 0 {
		t.Fatalf("kills %v, launches %v before the pools are known", append(out.kills, o.kills...), o.launches)
	}
	// Once they are, the tasks of pools that are not wanted go.
	if out := m.setPools(t0, []Pool{pool("p", 2, 1, 128, 3)}); len(out.kills) != 1 || out.kills[0].taskID != "q.0.x" {
		t.Fatalf("kills = %+v, want q.0.x", out.kills)
	}
}

// TestPersistedButNeverLaunched: the previous leader persisted a task and
// died before its ACCEPT reached the master. The next leader waits for the
// master's answer, then relaunches the slot at once, without counting a
// failure.
func TestPersistedButNeverLaunched(t *testing.T) {
	a := newHarness(t, pool("p", 1, 1, 128, 0))
	a.subscribe()
	id := launched(a.offers(offer("a1", 2, 1024, 0)))[0] // persisted, never sent
	b := newHarness(t)
	if err := b.m.restore(a.m.snapshot()); err != nil {
		t.Fatal(err)
	}
	b.m.setPools(b.now, []Pool{pool("p", 1, 1, 128, 0)})
	b.subscribe()
	if got := launched(b.offers(offer("a1", 2, 1024, 0))); len(got) != 0 {
		t.Fatalf("launched %v before the master answered about %s", got, id)
	}
	// An answer right after the launch may come before the master
	// processed the ACCEPT: not believed yet.
	b.update(withReason(status(id, "", mesos.TASK_LOST, false), mesos.REASON_RECONCILIATION, "Reconciliation: Task is unknown"))
	if got := launched(b.offers(offer("a1", 2, 1024, 0))); len(got) != 0 {
		t.Fatalf("launched %v on an early answer about %s", got, id)
	}
	b.advance(20 * time.Second) // the takeover took a while
	b.update(withReason(status(id, "", mesos.TASK_LOST, false), mesos.REASON_RECONCILIATION, "Reconciliation: Task is unknown"))
	if b.m.pools["p"].failed {
		t.Fatal("a task that never ran failed the pool")
	}
	if got := launched(b.offers(offer("a1", 2, 1024, 0))); len(got) != 1 {
		t.Fatalf("relaunch = %v, want one task", got)
	}
}
