package consul

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/hashicorp/consul/api"
)

// Config configures a Consul Discovery. Zero values mean the defaults of
// DefaultConfig; they are filled in one place, withDefaults.
type Config struct {
	// Address is the Consul agent's HTTP API: "host:port", or
	// "https://host:port" (or "host:port" with CONSUL_HTTP_SSL=true).
	// Default "127.0.0.1:8500". It takes precedence over CONSUL_HTTP_ADDR.
	//
	// The other settings of the client come from the standard environment
	// variables of Consul's API client (api.DefaultConfig):
	// CONSUL_HTTP_TOKEN or CONSUL_HTTP_TOKEN_FILE (the ACL token),
	// CONSUL_HTTP_SSL, CONSUL_CACERT, CONSUL_CAPATH, CONSUL_CLIENT_CERT,
	// CONSUL_CLIENT_KEY, CONSUL_TLS_SERVER_NAME, CONSUL_HTTP_SSL_VERIFY
	// and CONSUL_HTTP_AUTH.
	Address string
	// Token is the ACL token sent with every request; empty means
	// CONSUL_HTTP_TOKEN (or CONSUL_HTTP_TOKEN_FILE), else the agent's
	// default token. It needs service:write on Service (register, TTL
	// checks, deregister), service:read on it and node:read on the nodes
	// (the health endpoint Watch queries leaves out the entries of nodes
	// the token cannot read); docs/security.md has the policy.
	Token string
	// Datacenter to register in and watch; empty means the agent's.
	Datacenter string
	// Service is the catalog service name every node of one cluster
	// registers under. Default "sluice".
	Service string

	// TTL of the node's health check: a node that has not heartbeated for
	// TTL turns critical and drops out of every snapshot. Default 3s.
	TTL time.Duration
	// HeartbeatInterval between two TTL refreshes. At most TTL/2.
	// Default 1s.
	HeartbeatInterval time.Duration
	// DeregisterCriticalServiceAfter removes a node from the catalog after
	// its check has been critical this long (a crashed node never
	// deregisters itself). Consul's reaper runs at most once a minute, so
	// at least 1m. Default 1m.
	DeregisterCriticalServiceAfter time.Duration

	// JoinTimeout bounds the first registration in Join (fail fast when
	// Consul is unreachable). Default 3s.
	JoinTimeout time.Duration
	// RequestTimeout bounds each non-blocking request (heartbeat,
	// registration, deregistration) and is added to WaitTime for blocking
	// ones. Default 2s.
	RequestTimeout time.Duration
	// WaitTime is the longest a blocking query on the health endpoint
	// waits for a change. Default 30s.
	WaitTime time.Duration

	// RetryMin and RetryMax bound the exponential backoff (with jitter)
	// between retries of failed heartbeats and watch queries. Defaults
	// 200ms and 2s; RetryMax at most TTL, so that a node re-registers
	// within RetryMax of Consul's return.
	RetryMin, RetryMax time.Duration
	// RecoveryGrace: after a watcher could not reach Consul, it keeps the
	// members of its last snapshot that Consul does not list yet for this
	// long, while they re-register (a restarted dev agent or a rebuilt
	// catalog has lost them). New members still appear at once. Default
	// TTL + RetryMax.
	RecoveryGrace time.Duration

	// Logger receives warnings (Consul unreachable, re-registration) and
	// debug records. Default: discard.
	Logger *slog.Logger
}

// Defaults. See Config for their meaning and doc.go for how they combine.
const (
	DefaultAddress                        = "127.0.0.1:8500"
	DefaultService                        = "sluice"
	DefaultTTL                            = 3 * time.Second
	DefaultHeartbeatInterval              = 1 * time.Second
	DefaultDeregisterCriticalServiceAfter = 1 * time.Minute
	DefaultJoinTimeout                    = 3 * time.Second
	DefaultRequestTimeout                 = 2 * time.Second
	DefaultWaitTime                       = 30 * time.Second
	DefaultRetryMin                       = 200 * time.Millisecond
	DefaultRetryMax                       = 2 * time.Second
)

// minDeregisterAfter is Consul's floor for DeregisterCriticalServiceAfter:
// its reaper runs once a minute, smaller values act as 1m.
const minDeregisterAfter = time.Minute

// DefaultConfig returns the configuration with every default filled in.
func DefaultConfig() Config { return Config{}.withDefaults() }

// apiConfig is the Consul client configuration: api.DefaultConfig (the
// CONSUL_* environment variables) with the fields of c that are set.
func (c Config) apiConfig() *api.Config {
	ac := api.DefaultConfig()
	ac.Address = c.Address
	if c.Token != "" {
		ac.Token, ac.TokenFile = c.Token, ""
	}
	if c.Datacenter != "" {
		ac.Datacenter = c.Datacenter
	}
	return ac
}

// withDefaults fills zero fields with their defaults.
func (c Config) withDefaults() Config {
	setDefault(&c.Address, DefaultAddress)
	setDefault(&c.Service, DefaultService)
	setDefault(&c.TTL, DefaultTTL)
	setDefault(&c.HeartbeatInterval, DefaultHeartbeatInterval)
	setDefault(&c.DeregisterCriticalServiceAfter, DefaultDeregisterCriticalServiceAfter)
	setDefault(&c.JoinTimeout, DefaultJoinTimeout)
	setDefault(&c.RequestTimeout, DefaultRequestTimeout)
	setDefault(&c.WaitTime, DefaultWaitTime)
	setDefault(&c.RetryMin, DefaultRetryMin)
	setDefault(&c.RetryMax, DefaultRetryMax)
	setDefault(&c.RecoveryGrace, c.TTL+c.RetryMax)
	setDefault(&c.Logger, slog.New(slog.DiscardHandler))
	return c
}

func setDefault[T comparable](p *T, v T) {
	var zero T
	if *p == zero {
		*p = v
	}
}

// Validate reports the first invalid field, after defaults are applied,
// naming the field and the fix.
func (c Config) Validate() error {
	c = c.withDefaults()
	if !validServiceName(c.Service) {
		return fmt.Errorf("consul: config: Service %q: use 1-63 characters from a-z A-Z 0-9 - (a DNS label)", c.Service)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"TTL", c.TTL}, {"HeartbeatInterval", c.HeartbeatInterval},
		{"DeregisterCriticalServiceAfter", c.DeregisterCriticalServiceAfter},
		{"JoinTimeout", c.JoinTimeout}, {"RequestTimeout", c.RequestTimeout},
		{"WaitTime", c.WaitTime}, {"RetryMin", c.RetryMin}, {"RetryMax", c.RetryMax},
		{"RecoveryGrace", c.RecoveryGrace},
	} {
		if d.v < 0 {
			return fmt.Errorf("consul: config: %s is %v: must not be negative (0 means the default)", d.name, d.v)
		}
	}
	switch {
	case c.HeartbeatInterval > c.TTL/2:
		return fmt.Errorf("consul: config: HeartbeatInterval %v: must be at most TTL/2 (%v), or one late heartbeat fails the node", c.HeartbeatInterval, c.TTL/2)
	case c.DeregisterCriticalServiceAfter < minDeregisterAfter:
		return fmt.Errorf("consul: config: DeregisterCriticalServiceAfter %v: Consul's minimum is %v", c.DeregisterCriticalServiceAfter, minDeregisterAfter)
	case c.RetryMin > c.RetryMax:
		return fmt.Errorf("consul: config: RetryMin %v is above RetryMax %v", c.RetryMin, c.RetryMax)
	case c.RetryMax > c.TTL:
		return fmt.Errorf("consul: config: RetryMax %v: must be at most TTL (%v), so a node re-registers before its peers give up on it", c.RetryMax, c.TTL)
	}
	return nil
}

func validServiceName(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}
