package mesos

import (
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/user"
	"regexp"
	"strings"
	"time"
)

// Defaults of Config. DefaultConfig returns a Config holding them; New
// fills in every zero field of a Config with them.
const (
	DefaultConsul          = "127.0.0.1:8500"
	DefaultCluster         = "sluice"
	DefaultFrameworkName   = "sluice"
	DefaultFailoverTimeout = 7 * 24 * time.Hour
	DefaultEncoding        = "protobuf"

	DefaultSessionTTL          = 10 * time.Second
	DefaultLockDelay           = 15 * time.Second
	DefaultLockWait            = 5 * time.Second
	DefaultCallTimeout         = 15 * time.Second
	DefaultMasterTimeout       = 5 * time.Minute
	DefaultSubscribeBackoffMin = 500 * time.Millisecond
	DefaultSubscribeBackoffMax = 30 * time.Second
	DefaultRelaunchBackoffMin  = time.Second
	DefaultRelaunchBackoffMax  = 5 * time.Minute
	DefaultBackoffReset        = 10 * time.Minute
	DefaultReconcileInterval   = 5 * time.Minute
	DefaultReconcileRetryMin   = time.Second
	DefaultReconcileRetry      = 30 * time.Second
	DefaultKillGracePeriod     = 30 * time.Second
	DefaultDeclineRefuse       = 5 * time.Second
	DefaultIdleRefuse          = 2 * time.Minute
	DefaultPendingWindow       = 60 * time.Second
	DefaultStatusInterval      = 10 * time.Second
	DefaultStatusDebounce      = 200 * time.Millisecond
	DefaultNodeScaleInterval   = 10 * time.Second
)

// Config configures a Scheduler. Use DefaultConfig and change what you
// need; New fills zero fields (strings, durations) with the defaults
// above, then calls Validate. Booleans are taken as given (DefaultConfig
// sets Checkpoint).
type Config struct {
	// Master is the Mesos master's URL, "http://HOST:5050" (the scheduler
	// API path /api/v1/scheduler is added when the URL has no path), or
	// several separated by commas: masters of an HA Mesos. Any master
	// will do: one that does not lead redirects to the leader, which the
	// scheduler follows (and sends every call of the subscription to); one
	// that does not answer is skipped for the next. Required. https URLs
	// are used as given.
	Master string
	// Consul is the address (host:port) of the Consul agent the scheduler
	// uses for leader election and its state. Default DefaultConsul.
	Consul string
	// NodeConsul is the Consul address given to nodes (SLUICE_CONSUL);
	// set it when nodes reach Consul differently, e.g. "127.0.0.1:8500"
	// for a Consul agent on every Mesos agent. Default: Consul.
	NodeConsul string
	// Cluster is the Sluice cluster name: the nodes' Consul service name
	// and the KV prefix sluice/<Cluster>/mesos/. Default DefaultCluster.
	Cluster string
	// ID names this scheduler process in the status and the leader lock.
	// Default: "<hostname>-<pid>".
	ID string

	// Name is FrameworkInfo.name. Default DefaultFrameworkName.
	Name string
	// User is FrameworkInfo.user, the user tasks run as. Default: the
	// user running the scheduler.
	User string
	// Roles are the framework's roles (FrameworkInfo.roles, with the
	// MULTI_ROLE capability). Empty: the default role "*".
	Roles []string
	// Principal authenticates the framework (FrameworkInfo.principal and
	// the HTTP Basic user). Optional.
	Principal string
	// Secret is the principal's secret (HTTP Basic password). Requires
	// Principal.
	Secret string
	// FailoverTimeout is FrameworkInfo.failover_timeout: how long the
	// master keeps the framework's tasks running while no scheduler is
	// subscribed. It must cover a leader change (at least 3×SessionTTL +
	// LockDelay).
	// Default DefaultFailoverTimeout.
	FailoverTimeout time.Duration
	// Checkpoint is FrameworkInfo.checkpoint: agents checkpoint the tasks
	// so that they survive an agent restart. DefaultConfig sets it.
	Checkpoint bool
	// Encoding of the scheduler API: "protobuf" (default) or "json".
	Encoding string
	// GPUResources declares the GPU_RESOURCES capability: the master then
	// also offers agents with GPUs, which pools with gpus need (tasks
	// without GPUs are placed on other agents when possible). Off by
	// default: a framework that declares it holds GPU agents' resources.
	GPUResources bool

	// NodeBinary is the URI of the node executable, fetched into the
	// sandbox of every pool without a command of its own, which then runs
	// it ("./<base name>"). Optional if every pool has a command.
	NodeBinary string
	// KillGracePeriod is the time a node gets between SIGTERM and SIGKILL
	// when its task is killed (TaskInfo.kill_policy), to hand off its
	// instances. Default DefaultKillGracePeriod.
	KillGracePeriod time.Duration

	// HTTP, if set, is the address on which Run serves
	// GET /v1/mesos/status (":0" picks a port; see Scheduler.HTTPAddr).
	HTTP string
	// Logger receives the scheduler's logs. Default slog.Default().
	Logger *slog.Logger

	// SessionTTL is the TTL of the Consul session holding the leader
	// lock. Consul invalidates a dead leader's session within about
	// twice this, after which a standby takes over. Consul's minimum is
	// 10s. Default DefaultSessionTTL.
	SessionTTL time.Duration
	// LockDelay is the Consul lock-delay of the session: how long the lock
	// cannot be taken after the session is invalidated (a leader that
	// crashed, or lost Consul). A leader makes calls to the master only
	// within a lease of SessionTTL/2 after Consul last confirmed its lock,
	// so LockDelay must be at least that: then a successor cannot act
	// while the previous leader still may. Default DefaultLockDelay
	// (Consul's own default).
	LockDelay time.Duration
	// MasterTimeout: a leader that has had no subscription to any master
	// for this long steps down (releases the lock), so that a standby
	// that can reach a master takes over; it campaigns again after
	// SessionTTL. Default DefaultMasterTimeout.
	MasterTimeout time.Duration
	// LockWait bounds each blocking query of a standby waiting for the
	// lock, and so how long stopping a standby can take. Default
	// DefaultLockWait.
	LockWait time.Duration
	// CallTimeout bounds each HTTP call to the master (response headers).
	// Default DefaultCallTimeout.
	CallTimeout time.Duration
	// SubscribeBackoffMin and SubscribeBackoffMax bound the jittered
	// exponential backoff between failed subscription attempts.
	SubscribeBackoffMin, SubscribeBackoffMax time.Duration
	// RelaunchBackoffMin and RelaunchBackoffMax bound the exponential
	// backoff before relaunching a failed task: Min after the first
	// failure, doubling per consecutive failure.
	RelaunchBackoffMin, RelaunchBackoffMax time.Duration
	// BackoffReset: a task that ran this long before failing counts as a
	// first failure again (its instance's failure count and backoff
	// restart). Default DefaultBackoffReset.
	BackoffReset time.Duration
	// ReconcileInterval is the period of the full task reconciliation.
	// Default DefaultReconcileInterval.
	ReconcileInterval time.Duration
	// ReconcileRetryMin and ReconcileRetry bound the truncated
	// exponential backoff of explicit reconciliation: how long the
	// scheduler waits for the master's answer about a task before asking
	// again, ReconcileRetryMin first, doubling up to ReconcileRetry.
	// ReconcileRetry is also the period of repeating an unanswered KILL.
	// Defaults DefaultReconcileRetryMin, DefaultReconcileRetry.
	ReconcileRetryMin, ReconcileRetry time.Duration
	// DeclineRefuse is the refuse filter of offers declined (or left
	// unused) while tasks are pending. Default DefaultDeclineRefuse.
	DeclineRefuse time.Duration
	// IdleRefuse is the refuse filter of offers declined when nothing is
	// pending (offers are also suppressed then). Default DefaultIdleRefuse.
	IdleRefuse time.Duration
	// PendingWindow is how far back offers are remembered to explain why
	// a task is pending. Default DefaultPendingWindow.
	PendingWindow time.Duration
	// StatusInterval and StatusDebounce: the leader writes its status to
	// Consul at most every StatusDebounce after a change, and at least
	// every StatusInterval.
	StatusInterval, StatusDebounce time.Duration

	// NodeScaleInterval is the period of the autoscaled pool's decisions
	// (nodescale.go). Default DefaultNodeScaleInterval.
	NodeScaleInterval time.Duration
	// NodeCA is a PEM file with the CA that signed the nodes' control API
	// certificates: the scheduler then asks them over https, checking
	// their certificates against the agent's hostname. Empty: plain
	// http.
	NodeCA string
	// NodeToken is the bearer token of the nodes' control API, with the
	// admin role, sent when asking a node for its node recommendation
	// and to drain it; empty: none (nodes without authentication).
	NodeToken string
}

// DefaultConfig returns a Config with every default filled in, Checkpoint
// on, Master empty, and NodeConsul empty (it follows Consul).
func DefaultConfig() Config {
	c := Config{Checkpoint: true}
	c.fillDefaults()
	c.NodeConsul = ""
	return c
}

// fillDefaults sets every zero field to its default. It is the only place
// defaults are applied.
func (c *Config) fillDefaults() {
	str := func(p *string, def string) {
		if *p == "" {
			*p = def
		}
	}
	dur := func(p *time.Duration, def time.Duration) {
		if *p == 0 {
			*p = def
		}
	}
	str(&c.Consul, DefaultConsul)
	str(&c.NodeConsul, c.Consul)
	str(&c.Cluster, DefaultCluster)
	str(&c.Name, DefaultFrameworkName)
	str(&c.Encoding, DefaultEncoding)
	if c.ID == "" {
		host, _ := os.Hostname()
		if host == "" {
			host = "scheduler"
		}
		c.ID = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if c.User == "" {
		if u, err := user.Current(); err == nil {
			c.User = u.Username
		}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	dur(&c.FailoverTimeout, DefaultFailoverTimeout)
	dur(&c.KillGracePeriod, DefaultKillGracePeriod)
	dur(&c.SessionTTL, DefaultSessionTTL)
	dur(&c.LockDelay, DefaultLockDelay)
	dur(&c.LockWait, DefaultLockWait)
	dur(&c.CallTimeout, DefaultCallTimeout)
	dur(&c.MasterTimeout, DefaultMasterTimeout)
	dur(&c.SubscribeBackoffMin, DefaultSubscribeBackoffMin)
	dur(&c.SubscribeBackoffMax, DefaultSubscribeBackoffMax)
	dur(&c.RelaunchBackoffMin, DefaultRelaunchBackoffMin)
	dur(&c.RelaunchBackoffMax, DefaultRelaunchBackoffMax)
	dur(&c.BackoffReset, DefaultBackoffReset)
	dur(&c.ReconcileInterval, DefaultReconcileInterval)
	dur(&c.ReconcileRetryMin, DefaultReconcileRetryMin)
	dur(&c.ReconcileRetry, DefaultReconcileRetry)
	dur(&c.DeclineRefuse, DefaultDeclineRefuse)
	dur(&c.IdleRefuse, DefaultIdleRefuse)
	dur(&c.PendingWindow, DefaultPendingWindow)
	dur(&c.StatusInterval, DefaultStatusInterval)
	dur(&c.StatusDebounce, DefaultStatusDebounce)
	dur(&c.NodeScaleInterval, DefaultNodeScaleInterval)
}

// nameRE is what pool names must match: safe in KV paths and Mesos task
// IDs.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// clusterRE is what cluster names must match: the nodes register the
// cluster's Consul service under it, which must be a DNS label
// (cluster/consul).
var clusterRE = regexp.MustCompile(`^[A-Za-z0-9-]{1,63}$`)

// Validate reports the first invalid field, as a *ConfigError. It expects
// defaults to be filled in (as DefaultConfig and New do).
func (c *Config) Validate() error {
	if c.Master == "" {
		return fieldErr("Master", "the Mesos master URL is required, e.g. http://mesos-master:5050 (--master)")
	}
	if _, err := masterEndpoints(c.Master); err != nil {
		return fieldErr("Master", "%v", err)
	}
	if c.Consul == "" || strings.ContainsAny(c.Consul, " \t\n") {
		return fieldErr("Consul", "%q is not a Consul address; use host:port, e.g. 127.0.0.1:8500", c.Consul)
	}
	if !clusterRE.MatchString(c.Cluster) {
		return fieldErr("Cluster", "%q must be 1-63 characters of A-Z a-z 0-9 - (the nodes' Consul service name, a DNS label)", c.Cluster)
	}
	if strings.ContainsAny(c.ID, "\n\r") || len(c.ID) > 256 {
		return fieldErr("ID", "must be a single line of at most 256 bytes")
	}
	if c.User == "" {
		return fieldErr("User", "the user tasks run as is required (--user); it could not be taken from the environment")
	}
	for i, r := range c.Roles {
		if err := validRole(r); err != nil {
			return fieldErr(fmt.Sprintf("Roles[%d]", i), "%v", err)
		}
	}
	if c.Secret != "" && c.Principal == "" {
		return fieldErr("Secret", "a secret needs a principal (--principal)")
	}
	switch c.Encoding {
	case "protobuf", "json":
	default:
		return fieldErr("Encoding", "%q: use \"protobuf\" or \"json\"", c.Encoding)
	}
	if c.SessionTTL < 10*time.Second || c.SessionTTL > 24*time.Hour {
		return fieldErr("SessionTTL", "%v: Consul accepts 10s to 24h", c.SessionTTL)
	}
	if takeover := 3*c.SessionTTL + c.LockDelay; c.FailoverTimeout < takeover {
		return fieldErr("FailoverTimeout", "%v is shorter than a leader change can take (3×SessionTTL + LockDelay = %v): the master would kill every task before a standby takes over; use at least %v",
			c.FailoverTimeout, takeover, takeover)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"LockDelay", c.LockDelay}, {"LockWait", c.LockWait}, {"CallTimeout", c.CallTimeout}, {"MasterTimeout", c.MasterTimeout},
		{"SubscribeBackoffMin", c.SubscribeBackoffMin}, {"SubscribeBackoffMax", c.SubscribeBackoffMax},
		{"RelaunchBackoffMin", c.RelaunchBackoffMin}, {"RelaunchBackoffMax", c.RelaunchBackoffMax},
		{"BackoffReset", c.BackoffReset}, {"ReconcileInterval", c.ReconcileInterval},
		{"ReconcileRetryMin", c.ReconcileRetryMin}, {"ReconcileRetry", c.ReconcileRetry},
		{"KillGracePeriod", c.KillGracePeriod}, {"DeclineRefuse", c.DeclineRefuse}, {"IdleRefuse", c.IdleRefuse},
		{"PendingWindow", c.PendingWindow}, {"StatusInterval", c.StatusInterval}, {"StatusDebounce", c.StatusDebounce},
	} {
		if d.v < 0 {
			return fieldErr(d.name, "%v is negative", d.v)
		}
	}
	if c.LockDelay < c.SessionTTL/2 {
		return fieldErr("LockDelay", "%v is shorter than the leader's lease (SessionTTL/2 = %v): a successor could act while the old leader still may; use at least %v",
			c.LockDelay, c.SessionTTL/2, c.SessionTTL/2)
	}
	if c.SubscribeBackoffMax < c.SubscribeBackoffMin {
		return fieldErr("SubscribeBackoffMax", "%v is less than SubscribeBackoffMin (%v)", c.SubscribeBackoffMax, c.SubscribeBackoffMin)
	}
	if c.ReconcileRetry < c.ReconcileRetryMin {
		return fieldErr("ReconcileRetry", "%v is less than ReconcileRetryMin (%v)", c.ReconcileRetry, c.ReconcileRetryMin)
	}
	if c.RelaunchBackoffMax < c.RelaunchBackoffMin {
		return fieldErr("RelaunchBackoffMax", "%v is less than RelaunchBackoffMin (%v)", c.RelaunchBackoffMax, c.RelaunchBackoffMin)
	}
	if c.NodeBinary != "" {
		if err := validURI(c.NodeBinary); err != nil {
			return fieldErr("NodeBinary", "%v", err)
		}
	}
	return nil
}

// masterEndpoints returns the scheduler API URLs of a comma-separated
// list of master URLs.
func masterEndpoints(masters string) ([]string, error) {
	var out []string
	for _, m := range strings.Split(masters, ",") {
		e, err := schedulerEndpoint(strings.TrimSpace(m))
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// schedulerEndpoint returns the v1 scheduler API URL for a master URL.
func schedulerEndpoint(master string) (string, error) {
	u, err := url.Parse(master)
	if err != nil {
		return "", fmt.Errorf("%q is not a URL: %v; use http://HOST:5050", master, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return "", fmt.Errorf("%q: use http://HOST:5050 (or https://)", master)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/api/v1/scheduler"
	}
	return u.String(), nil
}

// validRole applies the Mesos role name rules (docs/roles.md).
func validRole(r string) error {
	switch {
	case r == "*":
		return nil
	case r == "", r == ".", r == "..":
		return fmt.Errorf("%q is not a valid Mesos role", r)
	case strings.HasPrefix(r, "-"):
		return fmt.Errorf("role %q must not start with '-'", r)
	case strings.ContainsAny(r, " \t\n\r\\*"):
		return fmt.Errorf("role %q must not contain whitespace, '\\' or '*'", r)
	}
	for _, part := range strings.Split(r, "/") {
		if part == "" || part == "." || part == ".." {
			return fmt.Errorf("role %q has an empty, '.' or '..' path component", r)
		}
	}
	return nil
}
