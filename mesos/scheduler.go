package mesos

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/sluicehq/sluice/internal/backoff"
	"github.com/sluicehq/sluice/mesos/mesosstatus"
)

// Scheduler is a Mesos framework scheduler for one Sluice cluster. Create
// it with New, give it the desired pools with SetPools (before or while it
// runs), and Run it. Several Scheduler processes of one cluster elect a
// leader through Consul; the others stand by.
//
// All methods are safe for concurrent use.
type Scheduler struct {
	cfg             Config
	log             *slog.Logger
	consul          *api.Client
	consulTransport *http.Transport
	endpoints       []string
	nodeClient      *http.Client // the nodes' control APIs (nodescale.go)
	nodeScheme      string

	running atomic.Bool

	// mu guards the fields below. It is never held while calling out.
	mu       sync.Mutex
	pools    []Pool
	poolsSet bool // SetPools was called
	// target is the autoscaled pool's size (nodescale.go), by pool name;
	// currentPools gives it as the pool's Instances.
	target       map[string]int
	status       mesosstatus.Status
	httpAddr     string
	poolsChanged chan struct{} // cap 1: SetPools → leader loop
	statusNotify chan struct{} // cap 1: leader loop → publisher
}

// New validates cfg (after filling in defaults) and returns a scheduler.
// It does not contact Consul or the master; Run does.
func New(cfg Config) (*Scheduler, error) {
	cfg.fillDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	endpoints, _ := masterEndpoints(cfg.Master)
	ccfg := api.DefaultConfig()
	ccfg.Address = cfg.Consul
	// No keep-alive to Consul: api.Lock's monitor and session renewal
	// goroutines finish their last requests after Unlock, asynchronously;
	// without idle connections nothing of them outlives Run for long. The
	// request rate is low (state and status writes, a blocking query).
	consulTransport := http.DefaultTransport.(*http.Transport).Clone()
	consulTransport.DisableKeepAlives = true
	// api.NewClient applies the TLS settings (CONSUL_CACERT,
	// CONSUL_CLIENT_CERT, ...) only to a transport without a
	// TLSClientConfig, which a clone of http.DefaultTransport may have.
	tlsCfg, err := api.SetupTLSConfig(&ccfg.TLSConfig)
	if err != nil {
		return nil, fmt.Errorf("mesos: Consul TLS settings (CONSUL_CACERT, CONSUL_CLIENT_CERT, CONSUL_CLIENT_KEY): %w", err)
	}
	consulTransport.TLSClientConfig = tlsCfg
	ccfg.Transport = consulTransport
	client, err := api.NewClient(ccfg)
	if err != nil {
		return nil, fmt.Errorf("mesos: Consul client for %s: %w", cfg.Consul, err)
	}
	nodeClient, nodeScheme, err := newNodeClient(cfg.NodeCA)
	if err != nil {
		return nil, err
	}
	s := &Scheduler{
		cfg: cfg, log: cfg.Logger.With("cluster", cfg.Cluster, "scheduler", cfg.ID),
		nodeClient: nodeClient, nodeScheme: nodeScheme,
		consul: client, consulTransport: consulTransport, endpoints: endpoints,
		poolsChanged: make(chan struct{}, 1),
		statusNotify: make(chan struct{}, 1),
	}
	s.status = s.baseStatus(mesosstatus.RoleStopped)
	return s, nil
}

// SetPools sets the desired pools: the leader launches, scales and kills
// node tasks to match (a pool left out has its tasks killed; SetPools(nil)
// kills every task). Until the first call a leader launches and kills
// nothing. It returns an error, and changes nothing, if a pool is invalid.
// It does not block on the scheduler.
func (s *Scheduler) SetPools(pools []Pool) error {
	if err := ValidatePools(pools); err != nil {
		return err
	}
	for i := range pools {
		if pools[i].GPUs > 0 && !s.cfg.GPUResources {
			return fieldErr(fmt.Sprintf("pools[%d].gpus", i), "%v: the scheduler must declare GPU_RESOURCES to be offered GPUs; set --gpu-resources", pools[i].GPUs)
		}
		if pools[i].Volume != nil && len(s.cfg.Roles) == 0 {
			return fieldErr(fmt.Sprintf("pools[%d].volume", i), "persistent volumes are reserved for the framework's role; give the scheduler one (--role)")
		}
	}
	cp := make([]Pool, len(pools))
	for i := range pools {
		cp[i] = pools[i].clone()
	}
	s.mu.Lock()
	s.pools, s.poolsSet = cp, true
	s.keepTargets()
	s.mu.Unlock()
	select {
	case s.poolsChanged <- struct{}{}:
	default:
	}
	return nil
}

// currentPools returns the desired pools, and false if SetPools was never
// called: then the desired state is unknown, and a leader launches and
// kills nothing (a scheduler started without its pools must not kill the
// cluster's nodes).
func (s *Scheduler) currentPools() ([]Pool, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.poolsWithTargets(), s.poolsSet
}

// Status returns this process's view: the full status while it leads,
// its role otherwise.
func (s *Scheduler) Status() mesosstatus.Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.status
	st.Pools = slices.Clone(st.Pools)
	st.Tasks = slices.Clone(st.Tasks)
	st.Problems = slices.Clone(st.Problems)
	return st
}

// HTTPAddr returns the address the status endpoint listens on, once Run
// has started it ("" if Config.HTTP is empty).
func (s *Scheduler) HTTPAddr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.httpAddr
}

func (s *Scheduler) baseStatus(role mesosstatus.Role) mesosstatus.Status {
	return mesosstatus.Status{Cluster: s.cfg.Cluster, Scheduler: s.cfg.ID, Role: role, Master: s.cfg.Master,
		Subscription: mesosstatus.SubscriptionStatus{State: mesosstatus.Disconnected}, Updated: time.Now()}
}

// setStatus replaces the status and tells the publisher.
func (s *Scheduler) setStatus(st mesosstatus.Status) {
	s.mu.Lock()
	s.status = st
	s.mu.Unlock()
	select {
	case s.statusNotify <- struct{}{}:
	default:
	}
}

// standbyProblem records a problem while not leading (campaign errors,
// the state cannot be read, no master reachable).
func (s *Scheduler) standbyProblem(kind mesosstatus.ProblemKind, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	s.status.Subscription.LastError, s.status.Subscription.LastErrorAt = err.Error(), now
	if len(s.status.Problems) >= 20 {
		s.status.Problems = slices.Delete(slices.Clone(s.status.Problems), 0, 1)
	}
	s.status.Problems = append(s.status.Problems, mesosstatus.Problem{At: now, Kind: kind, Message: err.Error()})
	s.status.Updated = now
}

// Run runs the scheduler until ctx ends: it campaigns for leadership and,
// while leading, runs the framework. It returns nil when ctx ends, or an
// error if it cannot start (ErrRunning, the HTTP address cannot be
// bound). Failures of Consul or the master are retried with backoff and
// reported in Status, not returned.
//
// When ctx ends a leader steps down: it closes its subscription and
// releases the lock, and does not tear down the framework: its tasks keep
// running for FailoverTimeout, so that a standby (or a restart) takes
// over.
func (s *Scheduler) Run(ctx context.Context) error {
	if !s.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer s.running.Store(false)

	if s.cfg.HTTP != "" {
		stopHTTP, err := s.serveHTTP()
		if err != nil {
			return err
		}
		defer stopHTTP()
	}
	transport := newTransport(&s.cfg)
	defer transport.CloseIdleConnections()
	defer s.consulTransport.CloseIdleConnections()

	retry := backoff.New(time.Second, 30*time.Second, 0.5)
	standby := func() {
		st := s.baseStatus(mesosstatus.RoleStandby)
		st.Problems = s.Status().Problems
		s.setStatus(st)
	}
	for ctx.Err() == nil {
		standby()
		l, err := campaign(ctx, s.consul, &s.cfg, s.HTTPAddr())
		if err != nil {
			s.log.Warn("mesos: campaigning for leadership", "err", err)
			s.standbyProblem(mesosstatus.ProblemConsul, err)
			backoff.Sleep(ctx, retry.Next())
			continue
		}
		if l == nil {
			break // ctx ended
		}
		retry.Reset()
		s.log.Info("mesos: leading", "session", l.session)
		err = s.lead(ctx, l, transport)
		s.stepDown(l)
		if ctx.Err() != nil {
			break
		}
		s.log.Warn("mesos: no longer leading", "err", err)
		standby()
		// A leader that lost its lock waits a moment so that the new
		// leader gets ahead; errors reading the state back off likewise.
		// One that could not reach a master leaves the lock to the
		// others for a session TTL.
		pause := time.Second
		if errors.Is(err, ErrNoMaster) {
			pause = s.cfg.SessionTTL
			s.standbyProblem(mesosstatus.ProblemSubscription, err)
		}
		backoff.Sleep(ctx, pause)
	}
	s.setStatus(s.baseStatus(mesosstatus.RoleStopped))
	s.log.Info("mesos: scheduler stopped")
	return nil
}

// stepDown publishes a last status saying so (best effort) and releases
// the lock.
func (s *Scheduler) stepDown(l *leadership) {
	st := s.Status()
	st.Role = mesosstatus.RoleStopped
	st.Subscription.State = mesosstatus.Disconnected
	st.Updated = time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if b, err := marshalStatus(st); err == nil {
		_ = l.write(ctx, map[string][]byte{mesosstatus.Key(s.cfg.Cluster): b})
	}
	l.resign()
}

// serveHTTP starts the status endpoint; the returned func stops it.
func (s *Scheduler) serveHTTP() (func(), error) {
	ln, err := net.Listen("tcp", s.cfg.HTTP)
	if err != nil {
		return nil, fmt.Errorf("mesos: status endpoint: %w", err)
	}
	s.mu.Lock()
	s.httpAddr = ln.Addr().String()
	s.mu.Unlock()
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("mesos: status endpoint", "err", err)
		}
	}()
	s.log.Info("mesos: serving status", "http", s.httpAddr)
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}, nil
}
