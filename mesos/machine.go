package mesos

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/httpcli/apierrors"

	"github.com/sluicehq/sluice/mesos/mesosstatus"
)

// machine is the scheduler's decision logic. It takes what happens — events
// from the master, the clock, the desired pools, the outcome of calls — and
// returns the calls to make, as an output. It does no I/O, reads no clock
// (every input carries now) and is not safe for concurrent use: the leader
// loop owns it for one leadership term.
//
// Invariants:
//   - a slot (pool, index) has at most one live task it keeps; extra live
//     tasks (scale-down, duplicates found by reconciliation) are killed;
//   - a slot is launched only when none of its tasks may be alive: a task
//     the master has not confirmed since the last (re)subscription, or
//     whose ACCEPT may or may not have reached the master, is live until
//     reconciliation says otherwise;
//   - every task ID is in the persisted state before its ACCEPT is sent
//     (the driver persists when the output has launches).
type machine struct {
	cfg       machineConfig
	newTaskID func(pool string, slot int) string

	frameworkID string
	subscribed  bool
	start       time.Time // when the term began
	suppressed  bool
	// declined is set when offers were declined or left unused since the
	// last REVIVE, so refuse filters may hold resources back.
	declined bool
	// wasPending are the slots that were pending at the end of the last
	// input: REVIVE is sent when a slot becomes pending, not while one
	// stays pending (that would make the master re-offer the same
	// resources at allocation speed).
	wasPending    map[slotKey]bool
	lastReconcile time.Time // last full (implicit) reconciliation

	pools map[string]*poolState
	order []string // pool names in SetPools order
	// known is set once setPools was called: until then the desired
	// state is unknown and no task is killed for not being wanted.
	known  bool
	slots  map[slotKey]*slot
	tasks  map[string]*task
	agents map[string]string // agent ID → hostname, from offers

	// membersKnown is set while the cluster's members in Consul are
	// known; activeNodes are the active members by slot (members.go).
	membersKnown bool
	membersErr   string
	activeNodes  map[slotKey][]string

	// doomed are the persistent volumes to destroy (ID → agent): their
	// slots are gone (volumes.go); hadDoomed is whether there were any at
	// the end of the last input.
	doomed    map[string]string
	hadDoomed bool

	offers   offerHistory
	problems []mesosstatus.Problem
	sub      mesosstatus.SubscriptionStatus
	// dirty is set when the persisted part of the state changed; the
	// driver persists and clears it.
	dirty bool
}

// machineConfig is what the machine needs from Config.
type machineConfig struct {
	cluster, nodeConsul, nodeBinary string
	// role and principal of the framework's reservations (volumes).
	role, principal string
	killGrace       time.Duration
	// launchSettle is how long after its launch a task the master says it
	// does not know may still be on its way (CallTimeout).
	launchSettle             time.Duration
	relaunchMin, relaunchMax time.Duration
	backoffReset             time.Duration
	reconcileInterval        time.Duration
	// reconcileRetryMin..reconcileRetry bound the truncated exponential
	// backoff of explicit reconciliation.
	reconcileRetryMin, reconcileRetry time.Duration
	declineRefuse, idleRefuse         time.Duration
	pendingWindow                     time.Duration
}

func machineConfigFrom(c *Config) machineConfig {
	return machineConfig{
		cluster: c.Cluster, nodeConsul: c.NodeConsul, nodeBinary: c.NodeBinary,
		role: firstRole(c.Roles), principal: c.Principal,
		killGrace: c.KillGracePeriod, launchSettle: c.CallTimeout,
		relaunchMin: c.RelaunchBackoffMin, relaunchMax: c.RelaunchBackoffMax,
		backoffReset:      c.BackoffReset,
		reconcileInterval: c.ReconcileInterval, reconcileRetryMin: c.ReconcileRetryMin, reconcileRetry: c.ReconcileRetry,
		declineRefuse: c.DeclineRefuse, idleRefuse: c.IdleRefuse,
		pendingWindow: c.PendingWindow,
	}
}

type poolState struct {
	spec         Pool // with the node binary applied
	fp           string
	failed       bool
	failedReason string
	failedAt     time.Time
}

type slotKey struct {
	pool  string
	index int
}

func (k slotKey) String() string { return k.pool + "." + strconv.Itoa(k.index) }

// slot is the history of one instance of a pool.
type slot struct {
	failures     int       // consecutive failures
	notLaunched  int       // consecutive launches that did not happen
	restarts     int       // relaunches after its task ended unexpectedly
	nextLaunch   time.Time // relaunch backoff
	lastReason   string    // why its last task ended
	pendingSince time.Time // since when it has no live task
	last         *task     // its last ended task, for the status
	volume       *slotVolume
}

// task is the scheduler's view of one Mesos task.
type task struct {
	id           string
	key          slotKey
	agentID      string
	hostname     string
	ports        []uint64 // allocated: actor endpoint, control API
	state        mesos.TaskState
	message      string
	reason       string
	launched     time.Time
	updated      time.Time // last state change
	runningSince time.Time
	// reported is set once the master or agent reported on the task
	// since its launch; a task never reported may not exist.
	reported bool
	// confirmed is set when the master reported on the task since the
	// last (re)subscription (or the task was launched in it).
	confirmed bool
	asked     time.Time // last explicit reconciliation of the task
	// asks counts the explicit reconciliations of the task the master
	// has not answered: the next one waits the asks-th delay of the
	// reconciliation backoff.
	asks     int
	kill     bool // the scheduler wants it dead
	killSent time.Time
	ended    time.Time
	// unreachableSince is when the master reported the task's agent
	// unreachable (zero while reachable).
	unreachableSince time.Time
	// acceptRefused: the master refused the ACCEPT of the task (an HTTP
	// error answer), so it was never launched.
	acceptRefused bool
}

func (t *task) terminal() bool { return isTerminal(t.state) }

// output is what the driver must do after an input, in this order:
// persist (if the machine is dirty; before any launch), launches,
// declines, kills, reconciliations, revive/suppress, then acknowledgements.
type output struct {
	launches  []launchOp
	declines  []declineOp
	kills     []killOp
	reconcile []reconcileOp
	revive    bool
	suppress  bool
	acks      []ackOp
}

// launchOp is an ACCEPT: the operations pre (RESERVE, CREATE, DESTROY,
// UNRESERVE of persistent volumes), then LAUNCH of tasks (if any).
type launchOp struct {
	offerID mesos.OfferID
	agentID string
	pre     []mesos.Offer_Operation
	tasks   []mesos.TaskInfo
	refuse  time.Duration
}

func (l *launchOp) taskIDs() []string {
	ids := make([]string, len(l.tasks))
	for i := range l.tasks {
		ids[i] = l.tasks[i].TaskID.Value
	}
	return ids
}

type declineOp struct {
	offerIDs []mesos.OfferID
	refuse   time.Duration
}

type killOp struct{ taskID, agentID string }

// reconcileOp asks the master about tasks (task ID → agent ID); an empty
// map asks about all of the framework's tasks.
type reconcileOp struct{ tasks map[string]string }

type ackOp struct {
	agentID, taskID string
	uuid            []byte
}

func newMachine(cfg machineConfig, now time.Time) *machine {
	return &machine{
		cfg:       cfg,
		newTaskID: randomTaskID,
		start:     now,
		pools:     map[string]*poolState{},
		slots:     map[slotKey]*slot{},
		tasks:     map[string]*task{},
		agents:    map[string]string{},
		doomed:    map[string]string{},
		offers:    offerHistory{max: 4096},
		sub:       mesosstatus.SubscriptionStatus{State: mesosstatus.Disconnected},
	}
}

// randomTaskID returns "<pool>.<slot>.<12 hex digits>": unique, parseable
// back to its slot, and a valid node ID.
func randomTaskID(pool string, slot int) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return pool + "." + strconv.Itoa(slot) + "." + hex.EncodeToString(b[:])
}

// parseTaskID returns the slot of a task ID made by randomTaskID.
func parseTaskID(id string) (slotKey, bool) {
	parts := strings.Split(id, ".")
	if len(parts) != 3 || !nameRE.MatchString(parts[0]) || parts[2] == "" {
		return slotKey{}, false
	}
	n, err := strconv.Atoi(parts[1])
	if err != nil || n < 0 || strconv.Itoa(n) != parts[1] {
		return slotKey{}, false
	}
	return slotKey{parts[0], n}, true
}

// ---- inputs ----

// setPools makes pools the desired state. A pool whose spec changed is no
// longer failed; slots beyond a pool's instances, and pools not listed,
// have their tasks killed.
func (m *machine) setPools(now time.Time, pools []Pool) output {
	next := map[string]*poolState{}
	m.order = m.order[:0]
	for _, p := range pools {
		spec := p.clone().withNodeBinary(m.cfg.nodeBinary)
		fp := spec.fingerprint()
		ps := m.pools[p.Name]
		if ps == nil || ps.fp != fp {
			old := ps
			ps = &poolState{spec: spec, fp: fp}
			if old != nil && old.failed {
				m.dirty = true
				// A new spec gets a fresh start.
				for k, s := range m.slots {
					if k.pool == p.Name {
						s.failures, s.nextLaunch = 0, time.Time{}
					}
				}
			}
		}
		ps.spec = spec
		next[p.Name] = ps
		m.order = append(m.order, p.Name)
		for i := 0; i < p.Instances; i++ {
			m.slot(slotKey{p.Name, i}, now)
		}
	}
	m.pools = next
	m.known = true
	// Forget slots no longer wanted once their tasks are gone.
	for k := range m.slots {
		if !m.desired(k) && m.liveTask(k) == nil {
			m.forgetSlot(k)
			m.dirty = true
		}
	}
	var out output
	m.finish(now, &out)
	return out
}

// slot returns the slot for k, creating it.
func (m *machine) slot(k slotKey, now time.Time) *slot {
	s := m.slots[k]
	if s == nil {
		s = &slot{pendingSince: now}
		m.slots[k] = s
	}
	return s
}

// desired reports whether slot k is wanted.
func (m *machine) desired(k slotKey) bool {
	ps := m.pools[k.pool]
	return ps != nil && k.index < ps.spec.Instances
}

// subscribed handles SUBSCRIBED: the framework ID is kept (and persisted),
// every task becomes unconfirmed and is reconciled explicitly, and the
// framework's tasks unknown to the scheduler are asked for implicitly.
func (m *machine) subscribedEvent(now time.Time, frameworkID string, heartbeat time.Duration) output {
	if frameworkID != m.frameworkID {
		m.frameworkID = frameworkID
		m.dirty = true
	}
	m.subscribed = true
	m.suppressed = false // a SUBSCRIBE without suppressed_roles unsuppresses
	m.declined = true    // filters of a previous subscription may remain
	m.wasPending = nil
	m.sub.State, m.sub.Since, m.sub.Heartbeat = mesosstatus.Subscribed, now, heartbeat
	var out output
	explicit := map[string]string{}
	for _, t := range m.tasks {
		if t.terminal() {
			continue
		}
		t.confirmed = false
		t.asked, t.asks = now, 1
		t.killSent = time.Time{} // a kill of the last subscription may be lost
		explicit[t.id] = t.agentID
	}
	if len(explicit) > 0 {
		out.reconcile = append(out.reconcile, reconcileOp{tasks: explicit})
	}
	out.reconcile = append(out.reconcile, reconcileOp{})
	m.lastReconcile = now
	m.finish(now, &out)
	return out
}

// disconnected records the end of a subscription.
func (m *machine) disconnected(now time.Time, err error) {
	if m.subscribed {
		m.sub.State = mesosstatus.Disconnected
		m.sub.Since = now
	}
	m.subscribed = false
	if err != nil {
		m.problem(now, mesosstatus.ProblemSubscription, err.Error())
	}
}

// subscribing records the start of a subscription attempt at endpoint.
func (m *machine) subscribing(now time.Time, endpoint string) {
	m.sub.State = mesosstatus.Subscribing
	m.sub.Leader = endpoint
	m.sub.Attempts++
}

// subscribeFailed records a failed subscription attempt.
func (m *machine) subscribeFailed(now time.Time, err error) {
	m.sub.State = mesosstatus.Disconnected
	m.problem(now, mesosstatus.ProblemSubscription, err.Error())
}

// errorEvent handles an ERROR event. "Framework has been removed" means
// the master killed every task of the framework and will not accept its
// ID again: the ID is dropped (the next SUBSCRIBE registers a new
// framework) and every task is relaunched.
func (m *machine) errorEvent(now time.Time, msg string) output {
	m.problem(now, mesosstatus.ProblemMaster, "ERROR event: "+msg)
	var out output
	if strings.Contains(msg, "removed") {
		m.frameworkID = ""
		m.dirty = true
		for _, t := range m.tasks {
			if !t.terminal() {
				m.ended(now, t, mesos.TASK_LOST, mesos.REASON_FRAMEWORK_REMOVED.String(), "framework removed by the master: "+msg)
			}
		}
	}
	m.finish(now, &out)
	return out
}

// rescind handles RESCIND. The scheduler answers offers at once, so a
// rescinded offer is one it no longer holds; a launch on it fails with
// TASK_LOST (REASON_INVALID_OFFERS) and is retried.
func (m *machine) rescind(now time.Time, offerID string) {
	m.sub.Rescinded++
	m.problem(now, mesosstatus.ProblemRescind, "offer "+offerID+" rescinded by the master")
}

// failure handles FAILURE: a lost agent's tasks are asked about at once
// (the master also reports them TASK_LOST); an executor failure needs
// nothing, its task's update follows.
func (m *machine) failure(now time.Time, agentID, executorID string) output {
	var out output
	if agentID == "" || executorID != "" {
		return out
	}
	m.problem(now, mesosstatus.ProblemAgent, "agent "+agentID+" lost")
	ask := map[string]string{}
	for _, t := range m.tasks {
		if t.agentID == agentID && !t.terminal() {
			t.asked, t.asks = now, t.asks+1
			ask[t.id] = t.agentID
		}
	}
	if len(ask) > 0 {
		out.reconcile = append(out.reconcile, reconcileOp{tasks: ask})
	}
	m.finish(now, &out)
	return out
}

// tick does what is due: relaunches after backoff (via finish), repeated
// reconciliation of unconfirmed tasks and kills, and the periodic full
// reconciliation.
func (m *machine) tick(now time.Time) output {
	var out output
	if m.subscribed {
		m.reconcileDue(now, &out)
	}
	m.finish(now, &out)
	return out
}

// launchFailed handles an ACCEPT the master refused or that may not have
// arrived: its tasks may or may not exist, so they stay live, unconfirmed,
// until reconciliation (after the resubscription that follows) tells.
func (m *machine) launchFailed(now time.Time, op launchOp, err error) {
	m.sub.RefusedAccepts++
	m.problem(now, mesosstatus.ProblemAccept, fmt.Sprintf("ACCEPT of offer %s (tasks %s) failed: %v", op.offerID.Value, strings.Join(op.taskIDs(), ", "), err))
	var refused *apierrors.Error
	for _, id := range op.taskIDs() {
		if t := m.tasks[id]; t != nil {
			t.confirmed = false
			t.asked, t.asks = time.Time{}, 0
			t.acceptRefused = errors.As(err, &refused)
		}
	}
}

// launchAborted forgets the tasks of a launch that was not sent (the state
// could not be persisted first).
func (m *machine) launchAborted(now time.Time, op launchOp, err error) {
	m.problem(now, mesosstatus.ProblemConsul, fmt.Sprintf("launch of %s not sent: %v", strings.Join(op.taskIDs(), ", "), err))
	for _, id := range op.taskIDs() {
		if t := m.tasks[id]; t != nil {
			delete(m.tasks, id)
			m.slot(t.key, now).pendingSince = now
		}
	}
	m.dirty = true
}

// callFailed records a failed call other than ACCEPT. Offers, kills and
// reconciliations are repeated by later inputs; a lost SUPPRESS or REVIVE
// is corrected after the resubscription the failure causes.
func (m *machine) callFailed(now time.Time, call string, err error) {
	m.problem(now, mesosstatus.ProblemCall, fmt.Sprintf("%s failed: %v", call, err))
}

// problem records something that went wrong, for the status.
func (m *machine) problem(now time.Time, kind mesosstatus.ProblemKind, msg string) {
	m.sub.LastError = msg
	m.sub.LastErrorAt = now
	const max = 20
	if len(m.problems) == max {
		m.problems = slices.Delete(m.problems, 0, 1)
	}
	m.problems = append(m.problems, mesosstatus.Problem{At: now, Kind: kind, Message: msg})
}

// finish is the common end of every input: it kills extra tasks and
// decides on REVIVE or SUPPRESS.
func (m *machine) finish(now time.Time, out *output) {
	m.killExtras(now, out)
	if !m.subscribed {
		return
	}
	pending := m.pendingSlots(now)
	newly := false
	pendingNow := make(map[slotKey]bool, len(pending))
	for _, k := range pending {
		pendingNow[k] = true
		if !m.wasPending[k] {
			newly = true
		}
	}
	m.wasPending = pendingNow
	// Volumes to destroy need offers from their agents too.
	cleanup := len(m.doomed) > 0
	if cleanup && !m.hadDoomed {
		newly = true
	}
	m.hadDoomed = cleanup
	switch {
	case newly && (m.suppressed || m.declined):
		out.revive = true
		m.suppressed, m.declined = false, false
	case len(pending) == 0 && !cleanup && !m.suppressed:
		out.suppress = true
		m.suppressed = true
	}
}

// isTerminal reports whether a task in state s is gone for good.
// TASK_UNREACHABLE is not: its agent may come back, and the task with it.
// TASK_UNKNOWN (the master knows neither the task nor its agent) is.
func isTerminal(s mesos.TaskState) bool {
	switch s {
	case mesos.TASK_FINISHED, mesos.TASK_FAILED, mesos.TASK_KILLED, mesos.TASK_LOST,
		mesos.TASK_ERROR, mesos.TASK_DROPPED, mesos.TASK_GONE, mesos.TASK_GONE_BY_OPERATOR,
		mesos.TASK_UNKNOWN:
		return true
	}
	return false
}

func firstRole(roles []string) string {
	if len(roles) == 0 {
		return "*"
	}
	return roles[0]
}
