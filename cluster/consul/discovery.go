package consul

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/sluicehq/sluice/cluster"
	"github.com/sluicehq/sluice/cluster/internal/snapshot"
	"github.com/sluicehq/sluice/internal/backoff"
)

// Discovery is a cluster.Discovery on the Consul catalog. It represents
// one node: it joins at most once, and after Leave it cannot be reused.
// All methods are safe for concurrent use.
//
// Goroutines: Join starts one heartbeat goroutine; each Watch starts one
// watch goroutine. All of them end when Leave is called (Leave waits for
// them); the heartbeat also ends with the Join context, and a watcher with
// its Watch context.
type Discovery struct {
	cfg    Config
	client *api.Client
	log    *slog.Logger

	life context.Context    // ends at Leave: every goroutine stops then
	end  context.CancelFunc // ends life
	wg   sync.WaitGroup     // heartbeat and watch goroutines

	mu     sync.Mutex // guards the fields below; held across Join's registration
	state  state
	self   cluster.Member
	hbStop context.CancelCauseFunc // stops the heartbeat; nil if none runs or it was abandoned
	hbDone chan struct{}           // closed when the heartbeat goroutine has returned
	gone   bool                    // self was deregistered at the end of the Join context

	unhealthy atomic.Pointer[string] // SetHealth's reason; nil or "" when healthy
	kick      chan struct{}          // SetHealth wakes the heartbeat (buffered, 1)
	lapsed    chan struct{}          // closed when the heartbeat found its membership lapsed (Lapsed)
}

type state int

const (
	stateIdle state = iota
	stateJoined
	stateLeft
)

var (
	_ cluster.Discovery      = (*Discovery)(nil)
	_ cluster.HealthReporter = (*Discovery)(nil)
	_ cluster.LapseReporter  = (*Discovery)(nil)
)

// SetHealth publishes the node's own health (cluster.HealthReporter): a
// non-empty reason turns its TTL check to warning with the reason as the
// check's output, from now on until SetHealth(""). Consul's ?passing
// filter, health dashboards and alerts see the node failing; the other
// members still count it (see healthy), so its instances stay where they
// are, paused, rather than being rolled back elsewhere. It does not block.
func (d *Discovery) SetHealth(reason string) {
	d.unhealthy.Store(&reason)
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// health returns the check status and output to publish.
func (d *Discovery) health() (status, output string) {
	if r := d.unhealthy.Load(); r != nil && *r != "" {
		return api.HealthWarning, "unhealthy: " + *r
	}
	return api.HealthPassing, ""
}

// errLeaving is the cancellation cause of the heartbeat when Leave stops it.
var errLeaving = errors.New("consul: leaving")

// New returns a Discovery for cfg. It does not contact Consul: Join does,
// and fails fast if Consul is unreachable.
func New(cfg Config) (*Discovery, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	client, err := api.NewClient(cfg.apiConfig())
	if err != nil {
		return nil, fmt.Errorf("consul: client for %s: %w", cfg.Address, err)
	}
	life, end := context.WithCancel(context.Background())
	return &Discovery{
		cfg:    cfg,
		client: client,
		log:    cfg.Logger.With("component", "cluster/consul", "consul", cfg.Address, "service", cfg.Service),
		life:   life,
		end:    end,
		kick:   make(chan struct{}, 1),
		lapsed: make(chan struct{}),
	}, nil
}

// Join implements cluster.Discovery: it registers self in the catalog
// under Config.Service with a passing TTL check, then returns, leaving a
// goroutine that refreshes the check every HeartbeatInterval and
// re-registers self whenever Consul has lost it (agent restarted). The
// first registration is bounded by JoinTimeout; a Consul that refuses the
// connection, does not answer or answers 5xx gives an error wrapping
// cluster.ErrUnavailable that names Config.Address. Join holds the
// Discovery's lock during that registration, so a concurrent Leave waits
// for it.
//
// When ctx ends the heartbeat stops and self is deregistered (best
// effort, bounded by RequestTimeout); Leave does the same and reports the
// deregistration error.
func (d *Discovery) Join(ctx context.Context, self cluster.Member) error {
	if err := self.Validate(); err != nil {
		return fmt.Errorf("consul: join: %w", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	switch d.state {
	case stateJoined:
		return fmt.Errorf("consul: join %q: %w", self.ID, cluster.ErrAlreadyJoined)
	case stateLeft:
		return fmt.Errorf("consul: join %q: %w", self.ID, cluster.ErrLeft)
	}

	reg := d.registration(self)
	rctx, cancel := context.WithTimeout(ctx, d.cfg.JoinTimeout)
	err := d.register(rctx, reg)
	cancel()
	if err != nil {
		return fmt.Errorf("consul: join %q: register with the Consul agent at %s: %w", self.ID, d.cfg.Address, d.classify(ctx, d.denied(err, "service:write")))
	}

	hctx, stop := context.WithCancelCause(ctx)
	stopOnLeave := context.AfterFunc(d.life, func() { stop(errLeaving) })
	done := make(chan struct{})
	d.state, d.self, d.hbStop, d.hbDone = stateJoined, self.Normalize(), stop, done
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		defer close(done)
		defer stopOnLeave()
		d.heartbeat(ctx, hctx, reg)
	}()
	d.log.Info("joined", "member", self.ID, "ttl", d.cfg.TTL, "heartbeat", d.cfg.HeartbeatInterval)
	return nil
}

// Leave implements cluster.Discovery. Teardown order: stop taking new
// Watch calls, stop the heartbeat and every watcher (their channels
// close), wait for all goroutines, then deregister self, bounded by ctx
// and RequestTimeout. A service Consul no longer knows (it restarted)
// counts as deregistered.
func (d *Discovery) Leave(ctx context.Context) error {
	d.mu.Lock()
	if d.state == stateLeft {
		d.mu.Unlock()
		d.wg.Wait()
		return nil
	}
	deregister := d.state == stateJoined && d.hbStop != nil
	d.state = stateLeft
	d.hbStop = nil
	d.mu.Unlock()

	d.end()
	d.wg.Wait()
	d.mu.Lock()
	deregister = deregister && !d.gone
	d.mu.Unlock()
	if !deregister {
		return nil
	}
	if err := d.deregister(ctx); err != nil {
		return fmt.Errorf("consul: leave %q: deregister from the Consul agent at %s: %w", d.self.ID, d.cfg.Address, d.classify(ctx, d.denied(err, "service:write")))
	}
	d.log.Info("left", "member", d.self.ID)
	return nil
}

// Watch implements cluster.Discovery with blocking queries on the health
// endpoint; a snapshot holds the members whose checks all pass, so a node
// whose TTL check turns critical drops out of the next snapshot. While
// Consul is unreachable the watcher retries with capped, jittered
// exponential backoff and sends nothing; when Consul answers again, for
// RecoveryGrace it keeps the members of its last snapshot that Consul does
// not know at all, while they re-register (see Config).
func (d *Discovery) Watch(ctx context.Context) <-chan []cluster.Member {
	ch := snapshot.New()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.state == stateLeft {
		close(ch)
		return ch
	}
	wctx, cancel := context.WithCancel(ctx)
	stopOnLeave := context.AfterFunc(d.life, cancel)
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		defer close(ch)
		defer stopOnLeave()
		defer cancel()
		d.watch(wctx, ch)
	}()
	return ch
}

// heartbeat refreshes the TTL check of reg until ctx ends. joinCtx is the
// context given to Join: if it is what ended ctx, the node leaves
// gracefully.
func (d *Discovery) heartbeat(joinCtx, ctx context.Context, reg *api.AgentServiceRegistration) {
	timer := time.NewTimer(d.cfg.HeartbeatInterval)
	defer timer.Stop()
	failures := 0
	retry := d.retryBackoff()
	lastOK, due := time.Now(), time.Now().Add(d.cfg.HeartbeatInterval)
	for {
		select {
		case <-ctx.Done():
			if joinCtx.Err() != nil && d.life.Err() == nil {
				d.leaveOnJoinEnd(joinCtx)
			}
			return
		case <-timer.C:
		case <-d.kick:
			timer.Stop()
		}
		// On a kick too: a process resumed after a freeze may change its
		// health (SetHealth) before the timer's beat runs, and that beat
		// must not bring the lapsed member back either.
		if now := time.Now(); lapsed(now, due, lastOK, d.cfg.HeartbeatInterval, d.cfg.TTL) {
			d.log.Error("membership lapsed: the heartbeat could not run for longer than the TTL (the process was frozen); the others have dropped this member, which stops heartbeating",
				"member", d.self.ID, "late", now.Sub(due).Round(time.Millisecond), "since_refresh", now.Sub(lastOK).Round(time.Millisecond), "ttl", d.cfg.TTL)
			close(d.lapsed)
			<-ctx.Done() // no more refreshes: the member stays out
			return
		}
		err := d.beat(ctx, reg)
		switch {
		case ctx.Err() != nil:
			// Stopped during the request: the select above returns.
		case err != nil:
			failures++
			if failures == 1 || failures%10 == 0 {
				d.log.Warn("heartbeat failed; retrying", "member", d.self.ID, "failures", failures, "err", d.denied(err, "service:write"))
			}
			next := retry.Next()
			due = time.Now().Add(next)
			timer.Reset(next)
		default:
			if failures > 0 {
				d.log.Info("heartbeat recovered", "member", d.self.ID, "failures", failures)
			}
			failures = 0
			retry.Reset()
			lastOK, due = time.Now(), time.Now().Add(d.cfg.HeartbeatInterval)
			timer.Reset(d.cfg.HeartbeatInterval)
		}
	}
}

// lapsed reports whether a heartbeat due at due and run at now finds the
// membership lapsed: it ran more than interval late (the process did not
// run: frozen, not merely busy) and the last refresh (lastOK) is more than
// ttl ago, so the check has turned critical and the others dropped the
// member. Failed refreshes (Consul unreachable) run on time and are no
// lapse.
func lapsed(now, due, lastOK time.Time, interval, ttl time.Duration) bool {
	return now.Sub(due) > interval && now.Sub(lastOK) > ttl
}

// Lapsed implements cluster.LapseReporter: the channel is closed when the
// heartbeat found the membership lapsed (then it refreshes it no more).
func (d *Discovery) Lapsed() <-chan struct{} { return d.lapsed }

// beat refreshes the TTL check once, re-registering reg if Consul no
// longer knows the check (it restarted and lost its state, or the service
// was reaped after being critical for DeregisterCriticalServiceAfter).
func (d *Discovery) beat(ctx context.Context, reg *api.AgentServiceRegistration) error {
	rctx, cancel := context.WithTimeout(ctx, d.cfg.RequestTimeout)
	defer cancel()
	q := (&api.QueryOptions{}).WithContext(rctx)
	status, output := d.health()
	err := d.client.Agent().UpdateTTLOpts(reg.Check.CheckID, output, status, q)
	if err == nil || !registrationLost(err) {
		return err
	}
	d.log.Warn("registration lost; re-registering", "member", d.self.ID, "err", err)
	again := *reg
	check := *reg.Check
	check.Status = status // an unhealthy node does not come back as alive
	again.Check = &check
	if err := d.register(rctx, &again); err != nil {
		return fmt.Errorf("re-register: %w", err)
	}
	d.log.Info("re-registered", "member", d.self.ID)
	return nil
}

func (d *Discovery) leaveOnJoinEnd(joinCtx context.Context) {
	if err := d.deregister(context.WithoutCancel(joinCtx)); err != nil {
		d.log.Warn("deregistration after the end of the Join context failed; Consul drops the member when its TTL expires", "member", d.self.ID, "err", err)
		return
	}
	d.mu.Lock()
	d.gone = true
	d.mu.Unlock()
	d.log.Info("left: Join context ended", "member", d.self.ID)
}

func (d *Discovery) register(ctx context.Context, reg *api.AgentServiceRegistration) error {
	return d.client.Agent().ServiceRegisterOpts(reg, api.ServiceRegisterOpts{ReplaceExistingChecks: true}.WithContext(ctx))
}

func (d *Discovery) deregister(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(ctx, d.cfg.RequestTimeout)
	defer cancel()
	err := d.client.Agent().ServiceDeregisterOpts(d.serviceID(d.self.ID), (&api.QueryOptions{}).WithContext(rctx))
	if isStatus(err, http.StatusNotFound) {
		return nil
	}
	return err
}

// watch runs the blocking-query loop of one Watch channel until ctx ends.
func (d *Discovery) watch(ctx context.Context, ch chan []cluster.Member) {
	var (
		index      uint64           // WaitIndex of the next query; 0 means answer at once
		sent       []cluster.Member // last snapshot published; nil before the first
		failures   int              // consecutive failed queries
		graceUntil time.Time        // until then, members of sent missing from Consul are kept
		retry      = d.retryBackoff()
		// filteredWarned: the ACL filtering of results was logged.
		filteredWarned bool
	)
	for {
		wait := d.cfg.WaitTime
		if left := time.Until(graceUntil); left > 0 {
			wait = min(wait, left+10*time.Millisecond) // wake up when the grace ends
		}
		// Consul adds up to WaitTime/16 of jitter to a blocking query.
		rctx, cancel := context.WithTimeout(ctx, wait+wait/16+d.cfg.RequestTimeout)
		q := (&api.QueryOptions{WaitIndex: index, WaitTime: wait}).WithContext(rctx)
		// All entries, not ?passing: the watcher filters them itself, so it
		// can tell a critical member (dead: drop it) from one Consul does
		// not know (maybe not re-registered yet: see RecoveryGrace).
		entries, meta, err := d.client.Health().Service(d.cfg.Service, "", false, q)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			failures++
			index = 0 // Consul may come back restarted, with a lower index
			if failures == 1 || failures%10 == 0 {
				d.log.Warn("watch query failed; keeping the last membership and retrying", "failures", failures, "err", d.denied(err, "service:read"))
			}
			if !backoff.Sleep(ctx, retry.Next()) {
				return
			}
			continue
		}
		if meta.ResultsFilteredByACLs && !filteredWarned {
			filteredWarned = true
			d.log.Warn(fmt.Sprintf("Consul left members out of the health of service %q because of ACLs: the token (Config.Token or CONSUL_HTTP_TOKEN) needs node:read on the nodes (e.g. node_prefix \"\" { policy = \"read\" }) and service:read on the service", d.cfg.Service))
		}
		wentBack := meta.LastIndex < index
		if sent != nil && (failures > 0 || wentBack) {
			graceUntil = time.Now().Add(d.cfg.RecoveryGrace)
			d.log.Info("watch recovered; keeping missing members while they re-register", "failures", failures, "grace", d.cfg.RecoveryGrace)
		}
		failures = 0
		retry.Reset()
		switch {
		case wentBack:
			index = 0 // Consul restarted or its state was rebuilt: read again at once
		case meta.LastIndex == 0:
			index = 1
		default:
			index = meta.LastIndex
		}

		alive, known := members(entries)
		snap := snapshot.Make(alive)
		if time.Now().Before(graceUntil) {
			snap = keepUnknown(snap, sent, known)
		}
		if sent == nil || !snapshot.Equal(snap, sent) {
			d.log.Debug("membership changed", "members", len(snap))
			snapshot.Publish(ch, snap)
			sent = snap
		}
	}
}

// keepUnknown adds to snap the members of prev that Consul does not know
// at all (members it knows but holds critical stay out).
func keepUnknown(snap, prev []cluster.Member, known map[string]bool) []cluster.Member {
	out := snap
	for _, m := range prev {
		if !known[m.ID] {
			out = append(out, m)
		}
	}
	if len(out) == len(snap) {
		return snap
	}
	return snapshot.Make(out)
}

// classify wraps err with cluster.ErrUnavailable when it means Consul
// could not be reached or failed (transport error, timeout, 5xx), as
// opposed to refusing the request (4xx) or ctx ending.
func (d *Discovery) classify(ctx context.Context, err error) error {
	var se api.StatusError
	switch {
	case ctx.Err() != nil:
		return err
	case errors.As(err, &se) && se.Code < 500:
		return err
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w: no answer in time: %w", cluster.ErrUnavailable, err)
	default:
		return fmt.Errorf("%w: %w", cluster.ErrUnavailable, err)
	}
}

// registrationLost reports whether an UpdateTTL error means the agent does
// not know the check: 404 "Unknown check ID" (Consul ≥ 1.11), or the
// older 500 "does not have associated TTL".
func registrationLost(err error) bool {
	var se api.StatusError
	if !errors.As(err, &se) {
		return false
	}
	return se.Code == http.StatusNotFound || containsFold(se.Body, "does not have associated TTL") || containsFold(se.Body, "unknown check")
}

func isStatus(err error, code int) bool {
	var se api.StatusError
	return errors.As(err, &se) && se.Code == code
}

// retryBackoff returns the delays between retries of a failing request:
// from RetryMin doubling to RetryMax, with ±50 % jitter so that the retries
// of many nodes spread out.
func (d *Discovery) retryBackoff() *backoff.Backoff {
	return backoff.New(d.cfg.RetryMin, d.cfg.RetryMax, 0.5)
}
