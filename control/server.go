package control

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/actors"
	"github.com/sluicehq/sluice/actors/status"
	"github.com/sluicehq/sluice/cluster"
	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/creds"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/topology"
)

// Node is what the control API needs from a running node.
type Node interface {
	ID() string
	Address() string
	Status() []status.OperatorStatus
	Members(ctx context.Context) ([]cluster.Member, error)
	Pending(ctx context.Context) ([]string, error)
	Queued() int64
	Buffered() int64
	Streams() []actors.StreamStatus
	Store() topology.Store
	Topology() topology.Topology
	Kinds() []string
	KindMetadata(kind string) (core.Metadata, bool)
	// CheckKind says why an operator of a hosted kind cannot run under
	// the node's guarantee (nil when it can, or the kind is not hosted).
	CheckKind(name, kind string) error
	// Events returns the node's latest cluster events, oldest first.
	Events() []status.Event
}

var _ Node = (*actors.Node)(nil)

// Launcher is implemented by launchers whose processes show in the status.
type Launcher interface {
	Launched() []api.LaunchedView
}

// Status is the answer of GET /v1/node.
//
// Deprecated: use api.NodeStatus, which it is an alias of.
type Status = api.NodeStatus

// Server serves the control API of one node.
type Server struct {
	cfg      Config
	node     Node
	launcher Launcher
	log      *slog.Logger
	http     *http.Server
	addr     string
	scheme   string // "http" or "https", for this node and the others
	mux      *http.ServeMux
	auth     authenticator
	hosts    hostCheck                  // the Host headers served (guard.go)
	csrf     http.CrossOriginProtection // refuses cross-origin changes
	conns    *connTracker               // bounds the connections (conns.go)
	tls      *creds.Source              // nil: plain HTTP
	tokens   *creds.Tokens              // nil: no tokens
	peer     *http.Client               // asks the other nodes
	done     chan error

	shutdownOnce sync.Once
	shutdownErr  error

	// external, when set, reads a launcher's processes and problems from
	// outside the node (the Mesos framework's tasks).
	external func(ctx context.Context) ([]api.LaunchedView, []string)

	console consoleHub // the web console's rates and event streams (console.go)

	autoscaler *autoscaler // nil when off (autoscaler.go)
}

// Listen opens the control API's listener as cfg says, so that its
// address is known before the node starts; Serve must follow. It reads
// the credentials of cfg.Security (every error names the file), and
// refuses to serve without authentication on an address other than
// loopback unless cfg.Security.Insecure.
func Listen(cfg Config) (*Server, net.Listener, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	sec := cfg.Security
	s := &Server{cfg: cfg, log: cfg.Logger, mux: http.NewServeMux(), done: make(chan error, 1), scheme: "http"}
	s.auth.enabled = sec.Authenticated()
	s.auth.certRoles = sec.CertRoles
	if sec.TLS.Enabled() {
		tc := sec.TLS
		tc.Logger = cfg.Logger
		src, err := creds.Load(tc)
		if err != nil {
			return nil, nil, fmt.Errorf("control: TLS: %w", err)
		}
		s.tls, s.auth.tls, s.scheme = src, src, "https"
	}
	if sec.TokensFile != "" || sec.Tokens != "" {
		labels := make([]string, len(api.Roles))
		for i, r := range api.Roles {
			labels[i] = string(r)
		}
		tokens, err := creds.LoadTokens(creds.TokensConfig{File: sec.TokensFile, Inline: sec.Tokens, Labels: labels, Logger: cfg.Logger})
		if err != nil {
			return nil, nil, fmt.Errorf("control: tokens: %w", err)
		}
		s.tokens, s.auth.tokens = tokens, tokens
	}
	if !s.auth.enabled && !sec.Insecure && !loopbackAddr(cfg.Addr) {
		return nil, nil, fmt.Errorf("%w: %s reaches beyond this host, and anyone reaching it could deploy, kill and launch: "+
			"configure tokens (-control-tokens-file) or client certificates (-control-ca, -control-cert-roles), or listen on 127.0.0.1; "+
			"behind a proxy that authenticates, set -control-insecure", ErrNoAuth, cfg.Addr)
	}
	l, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, nil, fmt.Errorf("control: listen on %s: %w", cfg.Addr, err)
	}
	s.addr = l.Addr().String()
	s.hosts = newHostCheck(cfg.Addr, sec.Hosts)
	if !s.auth.enabled {
		s.log.Warn("control: the control API has no authentication: whoever reaches it can deploy and kill operators; see docs/security.md", "addr", s.addr)
	}
	s.conns = newConnTracker(cfg.Limits)
	l = s.conns.listener(l)
	if s.tls != nil {
		auth := creds.NoClientCert
		switch {
		case sec.RequireClientCert:
			auth = creds.RequireClientCert
		case sec.TLS.CAFile != "":
			auth = creds.VerifyClientCertIfGiven
		}
		tc, err := s.tls.ServerTLS(auth)
		if err != nil {
			l.Close()
			return nil, nil, fmt.Errorf("control: TLS: %w", err)
		}
		l = tls.NewListener(l, tc)
	}
	s.peer = s.peerClient()
	return s, l, nil
}

// loopbackAddr reports whether addr (host:port) listens on loopback only:
// a loopback IP address or "localhost". All interfaces (":7070",
// "0.0.0.0:7070") and other names are not.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// peerClient returns the client that asks other nodes for their status:
// HTTPS verified against the CA bundle, with this node's certificate,
// when TLS is on.
func (s *Server) peerClient() *http.Client {
	d := &net.Dialer{Timeout: s.cfg.Limits.PeerTimeout}
	tr := &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 4, IdleConnTimeout: time.Minute,
		ResponseHeaderTimeout: s.cfg.Limits.PeerTimeout}
	if s.tls != nil {
		tr.DialTLSContext = s.tls.DialTLS(d)
	}
	return &http.Client{Timeout: s.cfg.Limits.PeerTimeout, Transport: tr,
		// A node never follows a redirect with its credentials.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// peerToken returns the token this node presents to the others, or "".
func (s *Server) peerToken() string {
	if s.cfg.Security.PeerToken != "" {
		return s.cfg.Security.PeerToken
	}
	if s.tokens == nil {
		return ""
	}
	for _, r := range api.Roles {
		if t, ok := s.tokens.First(string(r)); ok {
			return t
		}
	}
	return ""
}

// Addr returns the address the server listens on.
func (s *Server) Addr() string { return s.addr }

// URL returns the server's base URL: http:// or https:// and its address.
func (s *Server) URL() string { return s.scheme + "://" + s.addr }

// Authenticated reports whether the server requires credentials.
func (s *Server) Authenticated() bool { return s.auth.enabled }

// Handle registers an extra handler (e.g. /metrics) before Serve. It needs
// the read role, like every GET endpoint.
func (s *Server) Handle(pattern string, h http.Handler) {
	s.mux.Handle(pattern, need(api.RoleRead, h.ServeHTTP))
}

// SetLauncher makes the launcher's processes part of the status.
func (s *Server) SetLauncher(l Launcher) { s.launcher = l }

// Serve serves the API for node on l (from Listen) until Shutdown, and
// starts reloading the credentials when their files change.
func (s *Server) Serve(l net.Listener, node Node) {
	s.node = node
	s.mux.HandleFunc("GET /healthz", s.healthz)
	for _, rt := range []struct {
		pattern string
		role    api.Role
		h       http.HandlerFunc
	}{
		{"GET /v1/node", api.RoleRead, s.nodeStatus},
		{"GET /v1/status", api.RoleRead, s.clusterStatus},
		{"GET /v1/nodes", api.RoleRead, s.nodes},
		{"GET /v1/operators", api.RoleRead, s.listOperators},
		{"GET /v1/operators/{name}", api.RoleRead, s.getOperator},
		{"GET /v1/streams", api.RoleRead, s.streams},
		{"GET /v1/streams/{name}/tail", api.RoleRead, s.tail},
		{"GET /v1/graph", api.RoleRead, s.graph},
		{"GET /v1/checkpoints", api.RoleRead, s.listCheckpoints},
		{"GET /v1/autoscale", api.RoleRead, s.autoscaleStatus},
		{"GET /v1/checkpoints/{id}", api.RoleRead, s.getCheckpoint},
		{"POST /v1/checkpoints", api.RoleAdmin, s.takeCheckpoint},
		{"POST /v1/node/drain", api.RoleAdmin, s.drainNode},
		{"POST /v1/operators", api.RoleAdmin, s.deploy},
		{"POST /v1/deployments", api.RoleAdmin, s.deployMany},
		{"PUT /v1/operators/{name}/instances", api.RoleAdmin, s.scale},
		{"DELETE /v1/operators/{name}", api.RoleAdmin, s.kill},
	} {
		s.mux.HandleFunc(rt.pattern, need(rt.role, rt.h))
	}
	s.serveConsole()
	if s.tls != nil {
		if err := s.tls.Watch(); err != nil {
			s.log.Warn("control: certificates will not be reloaded", "error", err)
		}
	}
	if s.tokens != nil {
		if err := s.tokens.Watch(); err != nil {
			s.log.Warn("control: tokens will not be reloaded", "error", err)
		}
	}
	lim := s.cfg.Limits
	s.http = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: lim.ReadHeaderTimeout,
		ReadTimeout:       lim.ReadTimeout,
		WriteTimeout:      lim.WriteTimeout,
		IdleTimeout:       lim.IdleTimeout,
		MaxHeaderBytes:    lim.MaxHeaderBytes,
		ConnState:         s.conns.connState,
		ConnContext:       s.conns.connContext,
		// TLS handshake failures (a client certificate of another CA, say)
		// are logged with why.
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	s.http.RegisterOnShutdown(s.console.shutdown)
	s.autoscaler = s.startAutoscaler()
	go func() { s.done <- s.http.Serve(l) }()
}

// Shutdown stops the server, waiting for requests in progress until ctx
// ends, then stops reloading credentials. It is safe to call twice; later
// calls return the first's result.
func (s *Server) Shutdown(ctx context.Context) error {
	if s.http == nil {
		return nil
	}
	s.shutdownOnce.Do(func() {
		s.autoscaler.close() // it scales through the store and asks the other nodes
		err := s.http.Shutdown(ctx)
		if serr := <-s.done; !errors.Is(serr, http.ErrServerClosed) && err == nil {
			err = serr
		}
		s.peer.CloseIdleConnections()
		if s.tls != nil {
			err = errors.Join(err, s.tls.Close())
		}
		if s.tokens != nil {
			err = errors.Join(err, s.tokens.Close())
		}
		s.shutdownErr = err
	})
	return s.shutdownErr
}

// local returns this node's status.
func (s *Server) local(ctx context.Context) (api.NodeStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	members, err := s.node.Members(ctx)
	if err != nil {
		return api.NodeStatus{}, err
	}
	pending, err := s.node.Pending(ctx)
	if err != nil {
		return api.NodeStatus{}, err
	}
	st := api.NodeStatus{
		Node: s.node.ID(), Address: s.node.Address(), HTTP: s.addr, Kinds: s.node.Kinds(),
		Members: members, Operators: operatorViews(s.node.Status()), Pending: pending,
		Queued: s.node.Queued(), Buffered: s.node.Buffered(), Streams: streamCounts(s.node.Streams()),
	}
	if s.launcher != nil {
		st.Launched = s.launcher.Launched()
	}
	st.Checkpoints = s.checkpointStatus(ctx)
	st.Process = processStats()
	addLatencies(st.Operators, s.console.latencies)
	st.Health = s.health()
	st.Events = events(s.node.Events())
	return st, nil
}

func (s *Server) nodeStatus(w http.ResponseWriter, r *http.Request) {
	if !s.request(w, r, nil) {
		return
	}
	st, err := s.local(r.Context())
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}
