package mesostest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"time"
)

// Defaults for Config fields left zero.
const (
	// DefaultHeartbeatInterval is the Mesos master's default heartbeat
	// interval for scheduler subscriptions.
	DefaultHeartbeatInterval = 15 * time.Second
	// DefaultAllocationInterval is how often the test master runs an
	// allocation round. (Mesos defaults --allocation_interval to 1s; the
	// test master is faster so that tests are.)
	DefaultAllocationInterval = 100 * time.Millisecond
	// DefaultStatusUpdateRetryInterval is the initial retry interval for
	// unacknowledged status updates, the agent's
	// STATUS_UPDATE_RETRY_INTERVAL_MIN.
	DefaultStatusUpdateRetryInterval = 10 * time.Second
	// DefaultStatusUpdateMaxRetryInterval caps the exponential retry
	// backoff, the agent's STATUS_UPDATE_RETRY_INTERVAL_MAX.
	DefaultStatusUpdateMaxRetryInterval = 10 * time.Minute
	// DefaultKillGracePeriod is the SIGTERM to SIGKILL escalation delay
	// used when neither the KILL call nor the TaskInfo has a KillPolicy
	// (the Mesos command executor's default).
	DefaultKillGracePeriod = 3 * time.Second
	// DefaultPortsWatchInterval is how often the ports isolator checks
	// (Mesos' default --container_ports_watch_interval is 30s; the test
	// master is faster so that tests are).
	DefaultPortsWatchInterval = 200 * time.Millisecond
)

// housekeepingTick is the granularity of time-based work (failover
// timeouts, offer timeouts, status update retries, allocation rounds).
const housekeepingTick = 10 * time.Millisecond

// Config configures a Master. The zero value is valid; zero fields take
// the documented defaults.
type Config struct {
	// HeartbeatInterval is advertised in SUBSCRIBED
	// (heartbeat_interval_seconds) and is the period of HEARTBEAT events.
	// Default DefaultHeartbeatInterval.
	HeartbeatInterval time.Duration

	// AllocationInterval is the period of allocation rounds, in which
	// unused agent resources are offered. Allocation also runs right away
	// after a subscription, agent registration, task termination, REVIVE
	// and rescission. Default DefaultAllocationInterval.
	AllocationInterval time.Duration

	// StatusUpdateRetryInterval is the delay before an unacknowledged
	// status update is resent; it doubles on every retry up to
	// StatusUpdateMaxRetryInterval. Default
	// DefaultStatusUpdateRetryInterval.
	StatusUpdateRetryInterval time.Duration

	// StatusUpdateMaxRetryInterval caps the retry delay. Default
	// DefaultStatusUpdateMaxRetryInterval.
	StatusUpdateMaxRetryInterval time.Duration

	// KillGracePeriod is the default delay between SIGTERM and SIGKILL
	// when a task is killed. Default DefaultKillGracePeriod.
	KillGracePeriod time.Duration

	// OfferTimeout, if positive, rescinds offers that are outstanding for
	// longer (Mesos --offer_timeout). Zero, the Mesos default, never
	// rescinds.
	OfferTimeout time.Duration

	// WorkDir is the directory in which the master creates its private
	// directory for task sandboxes. Default os.TempDir(). The private
	// directory is removed by Close.
	WorkDir string

	// Agents are registered before New returns.
	Agents []AgentSpec

	// Masters is the number of masters of the simulated HA Mesos, each
	// with its own URL (URLs); master 0 leads at first. Non-leading
	// masters redirect (307) to the leader. Default 1.
	Masters int

	// EnforcePorts turns on the agents' network/ports isolator with
	// --enforce_container_ports: every PortsWatchInterval the listening
	// TCP sockets of each task's processes are checked, and a task
	// listening on a port not allocated to it (its "ports" resources) is
	// killed: TASK_FAILED, REASON_CONTAINER_LIMITATION. Linux only.
	EnforcePorts bool
	// PortsWatchInterval is --container_ports_watch_interval. Default
	// DefaultPortsWatchInterval.
	PortsWatchInterval time.Duration

	// StrictAllocationInfo makes the master stricter than Mesos, which
	// gives operation resources without allocation_info the offer's
	// (protobuf::injectAllocationInfo): an operation of a MULTI_ROLE
	// framework (whose offers carry allocation_info) with a resource
	// without it is invalid, and a task using one fails (TASK_ERROR). For
	// testing that a scheduler keeps the allocation_info it was offered.
	StrictAllocationInfo bool

	// Credentials, if not empty, make the masters require HTTP framework
	// authentication, like a Mesos master started with
	// --authenticate_http_frameworks and --credentials (which maps
	// principals to secrets), using the default "basic" authenticator:
	// every request to /api/v1/scheduler must carry HTTP Basic
	// credentials (user: the principal, password: its secret) found here,
	// else it is answered 401 Unauthorized with
	// `WWW-Authenticate: Basic realm="mesos-master-scheduler"` (AuthRealm)
	// and an empty body, before any other check (libprocess authenticates
	// before the handler runs, so even a master that does not lead answers
	// 401 rather than redirecting). A SUBSCRIBE whose
	// FrameworkInfo.principal is set and differs from the authenticated
	// principal fails validation (400, "Authenticated principal 'a' does
	// not match principal 'b' set in `FrameworkInfo`", as
	// validation::scheduler::call::validate); one without a principal is
	// accepted. AuthFailures counts the 401s.
	Credentials map[string]string

	// Logf, if non-nil, receives diagnostic messages (e.g. testing.T.Logf).
	// It may be called from any goroutine until Close returns, sometimes
	// with the master's lock held, so it must not call the Master.
	Logf func(format string, args ...any)
}

func (c *Config) setDefaults() {
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if c.AllocationInterval <= 0 {
		c.AllocationInterval = DefaultAllocationInterval
	}
	if c.StatusUpdateRetryInterval <= 0 {
		c.StatusUpdateRetryInterval = DefaultStatusUpdateRetryInterval
	}
	if c.StatusUpdateMaxRetryInterval <= 0 {
		c.StatusUpdateMaxRetryInterval = DefaultStatusUpdateMaxRetryInterval
	}
	if c.StatusUpdateMaxRetryInterval < c.StatusUpdateRetryInterval {
		c.StatusUpdateMaxRetryInterval = c.StatusUpdateRetryInterval
	}
	if c.KillGracePeriod <= 0 {
		c.KillGracePeriod = DefaultKillGracePeriod
	}
	if c.WorkDir == "" {
		c.WorkDir = os.TempDir()
	}
	if c.Masters <= 0 {
		c.Masters = 1
	}
	if c.PortsWatchInterval <= 0 {
		c.PortsWatchInterval = DefaultPortsWatchInterval
	}
}

// ErrClosed is returned by control methods called after Close.
var ErrClosed = errors.New("mesostest: master closed")

// Master is an in-process Mesos master (or several: Config.Masters, of
// which one leads) speaking the v1 scheduler HTTP API on 127.0.0.1, with
// simulated agents whose tasks run as local processes. All methods are
// safe for concurrent use.
type Master struct {
	cfg     Config
	masters []*masterProc
	rootDir string

	done      chan struct{} // closed by Close
	kick      chan struct{} // requests an allocation round (capacity 1)
	closeOnce sync.Once
	closeErr  error
	wg        sync.WaitGroup // every goroutine the master starts

	mu      sync.Mutex
	closed  bool
	changed chan struct{} // closed and replaced on every state change
	// id is the ID of the leading master (the last one if none leads).
	id string
	// leader is the index of the leading master, -1 while none is
	// elected; it answers 503 until recoveredAt.
	leader      int
	recoveredAt time.Time

	agents         map[string]*agent
	agentOrder     []string
	frameworks     map[string]*framework
	fwOrder        []string
	offers         map[string]*offer
	tasks          map[taskKey]*task // active: not yet terminal-and-acknowledged
	allTasks       []*task           // every task ever launched, for snapshots
	nextFwSeq      int
	nextOffer      int
	nextRun        int
	rounds         uint64
	nextAlloc      time.Time
	rrStart        int
	procs          int
	subReject      SubscribeRejection
	authFailures   int
	acceptFail     int
	acceptDelay    time.Duration
	pendingAccepts []*pendingAccept
	calls          []Call
}

// New starts a test master (Config.Masters of them) listening on
// 127.0.0.1 at ports picked by the kernel. Call Close to stop it.
func New(cfg Config) (*Master, error) {
	cfg.setDefaults()
	root, err := os.MkdirTemp(cfg.WorkDir, "mesostest-")
	if err != nil {
		return nil, fmt.Errorf("mesostest: creating work directory: %w", err)
	}
	m := &Master{
		cfg:        cfg,
		rootDir:    root,
		done:       make(chan struct{}),
		kick:       make(chan struct{}, 1),
		changed:    make(chan struct{}),
		agents:     make(map[string]*agent),
		frameworks: make(map[string]*framework),
		offers:     make(map[string]*offer),
		tasks:      make(map[taskKey]*task),
	}
	fail := func(err error) (*Master, error) {
		for _, p := range m.masters {
			_ = p.ln.Close()
		}
		_ = os.RemoveAll(root)
		return nil, err
	}
	for i := 0; i < cfg.Masters; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return fail(fmt.Errorf("mesostest: listening on 127.0.0.1: %w", err))
		}
		p := &masterProc{id: formatUUID(newUUID()), ln: ln, url: "http://" + ln.Addr().String()}
		p.srv = &http.Server{Handler: m.routes(i), ReadHeaderTimeout: 10 * time.Second}
		m.masters = append(m.masters, p)
	}
	m.id = m.masters[0].id
	for _, spec := range cfg.Agents {
		if err := m.AddAgentSpec(spec); err != nil {
			return fail(err)
		}
	}
	for _, p := range m.masters {
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			if err := p.srv.Serve(p.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				m.logf("mesostest: HTTP server stopped: %v", err)
			}
		}()
	}
	m.wg.Add(1)
	go m.housekeepingLoop()
	if cfg.EnforcePorts {
		m.wg.Add(1)
		go m.portsIsolator()
	}
	return m, nil
}

// ID returns the leading master's ID (the last leader's while none
// leads). Framework and offer IDs it assigns are prefixed by it.
func (m *Master) ID() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.id
}

// URL returns the base URL of the first master, "http://127.0.0.1:<port>"
// (the leader unless FailOver changed it).
func (m *Master) URL() string { return m.masters[0].url }

// Addr returns the first master's "127.0.0.1:<port>" listen address.
func (m *Master) Addr() string { return m.masters[0].ln.Addr().String() }

// SchedulerEndpoint returns the first master's v1 scheduler API endpoint,
// URL()+"/api/v1/scheduler", the address to give mesos-go's
// httpcli.Endpoint.
func (m *Master) SchedulerEndpoint() string { return m.masters[0].url + schedulerPath }

// WorkDir returns the private directory holding task sandboxes. It is
// removed by Close.
func (m *Master) WorkDir() string { return m.rootDir }

// Close stops the master: subscription streams are closed, every task
// process is killed (SIGKILL to its process group), all goroutines are
// stopped and waited for, and the work directory is removed. Close is
// idempotent; later calls return the first call's result.
func (m *Master) Close() error {
	m.closeOnce.Do(func() {
		m.mu.Lock()
		m.closed = true
		close(m.done)
		for _, fw := range m.frameworks {
			if fw.stream != nil {
				fw.stream.close()
			}
		}
		m.bumpLocked()
		m.mu.Unlock()

		// Stream handlers and process supervisors watch m.done. Shutdown
		// waits for in-flight handlers to return.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var errs []error
		for _, p := range m.masters {
			if err := p.srv.Shutdown(ctx); err != nil {
				errs = append(errs, fmt.Errorf("mesostest: shutting down HTTP server: %w", err))
				_ = p.srv.Close()
			}
		}
		m.wg.Wait()
		if err := os.RemoveAll(m.rootDir); err != nil {
			errs = append(errs, fmt.Errorf("mesostest: removing work directory: %w", err))
		}
		m.closeErr = errors.Join(errs...)
	})
	return m.closeErr
}

// WaitUntil blocks until cond returns true or ctx is done. cond is
// evaluated immediately and again after every state change of the master
// (task state, process exit, subscription, offer, allocation round ...),
// so tests can wait for conditions on snapshots (Tasks, Frameworks,
// Offers, State) without sleeping. cond must not block; it may call any
// method of m.
func (m *Master) WaitUntil(ctx context.Context, cond func() bool) error {
	for {
		m.mu.Lock()
		ch := m.changed
		m.mu.Unlock()
		if cond() {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("mesostest: waiting for condition: %w", context.Cause(ctx))
		}
	}
}

// bumpLocked wakes WaitUntil callers. Callers hold m.mu.
func (m *Master) bumpLocked() {
	close(m.changed)
	m.changed = make(chan struct{})
}

// unlock releases m.mu after a state change, waking WaitUntil callers.
func (m *Master) unlock() {
	m.bumpLocked()
	m.mu.Unlock()
}

// kickAllocation requests an allocation round as soon as possible.
func (m *Master) kickAllocation() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

func (m *Master) logf(format string, args ...any) {
	if m.cfg.Logf != nil {
		m.cfg.Logf(format, args...)
	}
}

// housekeepingLoop performs all time-based work: failover timeouts, offer
// timeouts, status update retries and allocation rounds.
func (m *Master) housekeepingLoop() {
	defer m.wg.Done()
	ticker := time.NewTicker(housekeepingTick)
	defer ticker.Stop()
	for {
		select {
		case <-m.done:
			return
		case <-m.kick:
			m.housekeeping(true)
		case <-ticker.C:
			m.housekeeping(false)
		}
	}
}

func (m *Master) housekeeping(forceAllocation bool) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	now := time.Now()
	changed := m.expireFrameworksLocked(now)
	if m.recoverDueLocked(now) {
		changed = true
	}
	if m.applyDueAcceptsLocked(now) {
		changed = true
	}
	if m.expireOffersLocked(now) {
		changed = true
	}
	if m.retryStatusUpdatesLocked(now) {
		changed = true
	}
	if forceAllocation || !now.Before(m.nextAlloc) {
		m.allocateLocked(now)
		m.nextAlloc = now.Add(m.cfg.AllocationInterval)
		changed = true
	}
	if changed {
		m.unlock()
		return
	}
	m.mu.Unlock()
}

// State is a consistent snapshot of the whole master.
type State struct {
	// Agents lists registered and lost agents in registration order.
	Agents []Agent
	// Frameworks lists frameworks in first-subscription order, including
	// removed ones.
	Frameworks []Framework
	// Offers lists outstanding offers.
	Offers []Offer
	// Tasks lists every task ever launched, in launch order.
	Tasks []Task
	// AllocationRounds counts completed allocation rounds. Tests can wait
	// for it to advance to know that the allocator has considered the
	// current state (e.g. to assert that a suppressed framework got no
	// offer).
	AllocationRounds uint64
	// RunningProcesses counts live task processes.
	RunningProcesses int
}

// State returns a snapshot of the master.
func (m *Master) State() State {
	m.mu.Lock()
	defer m.mu.Unlock()
	return State{
		Agents:           m.agentsLocked(),
		Frameworks:       m.frameworksLocked(),
		Offers:           m.offersLocked(),
		Tasks:            m.tasksLocked(),
		AllocationRounds: m.rounds,
		RunningProcesses: m.procs,
	}
}

// AllocationRounds returns the number of completed allocation rounds.
func (m *Master) AllocationRounds() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rounds
}
