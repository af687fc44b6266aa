package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/sluicehq/sluice/control/api"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/sluicehq/sluice/actors"
	"github.com/sluicehq/sluice/cluster"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/topology"
)

// Node is what the control API needs from a running node.
type Node interface {
	ID() string
	Address() string
	Status() []actors.OperatorStatus
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
}

var _ Node = (*actors.Node)(nil)

// Launcher is implemented by launchers whose processes show in the status.
type Launcher interface {
	Launched() []api.LaunchedView
}

// Status is the answer of GET /v1/node: this node alone.
type Status struct {
	Node      string                  `json:"node"`
	Address   string                  `json:"address"`
	HTTP      string                  `json:"http"`
	Kinds     []string                `json:"kinds"`
	Members   []cluster.Member        `json:"members"`
	Operators []actors.OperatorStatus `json:"operators"`
	Pending   []string                `json:"pending"`
	Queued    int64                   `json:"queued"`
	Buffered  int64                   `json:"buffered"`
	// Streams counts, per stream, records produced here while no operator
	// read it (dropped, or held until one does).
	Streams  []actors.StreamStatus `json:"streams,omitempty"`
	Launched []api.LaunchedView    `json:"launched,omitempty"`
}

// Server serves the control API of one node.
type Server struct {
	node     Node
	launcher Launcher
	log      *slog.Logger
	http     *http.Server
	addr     string
	mux      *http.ServeMux
	client   *http.Client
	done     chan error

	shutdownOnce sync.Once
	shutdownErr  error

	// mesos, when set, reads the Mesos framework's tasks and problems.
	mesos func(ctx context.Context) ([]api.LaunchedView, []string)
}

// Listen opens the control API's listener on addr (":0" picks a port), so
// that its address is known before the node starts. Serve must follow.
func Listen(addr string, log *slog.Logger) (*Server, net.Listener, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("control: listen on %s: %w", addr, err)
	}
	if log == nil {
		log = slog.Default()
	}
	s := &Server{log: log, addr: l.Addr().String(), mux: http.NewServeMux(), done: make(chan error, 1),
		client: &http.Client{Timeout: 3 * time.Second}}
	return s, l, nil
}

// Addr returns the address the server listens on.
func (s *Server) Addr() string { return s.addr }

// Handle registers an extra handler (e.g. /metrics) before Serve.
func (s *Server) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// SetLauncher makes the launcher's processes part of the status.
func (s *Server) SetLauncher(l Launcher) { s.launcher = l }

// Serve serves the API for node on l until Shutdown.
func (s *Server) Serve(l net.Listener, node Node) {
	s.node = node
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	s.mux.HandleFunc("GET /v1/node", s.nodeStatus)
	s.mux.HandleFunc("GET /v1/status", s.clusterStatus)
	s.mux.HandleFunc("GET /v1/nodes", s.nodes)
	s.mux.HandleFunc("GET /v1/operators", s.listOperators)
	s.mux.HandleFunc("GET /v1/operators/{name}", s.getOperator)
	s.mux.HandleFunc("POST /v1/operators", s.deploy)
	s.mux.HandleFunc("POST /v1/deployments", s.deployMany)
	s.mux.HandleFunc("PUT /v1/operators/{name}/instances", s.scale)
	s.mux.HandleFunc("DELETE /v1/operators/{name}", s.kill)
	s.mux.HandleFunc("GET /v1/streams", s.streams)
	s.mux.HandleFunc("GET /v1/graph", s.graph)
	s.http = &http.Server{Handler: s.mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { s.done <- s.http.Serve(l) }()
}

// Shutdown stops the server, waiting for requests in progress until ctx
// ends. It is safe to call twice; later calls return the first's result.
func (s *Server) Shutdown(ctx context.Context) error {
	if s.http == nil {
		return nil
	}
	s.shutdownOnce.Do(func() {
		err := s.http.Shutdown(ctx)
		if serr := <-s.done; !errors.Is(serr, http.ErrServerClosed) && err == nil {
			err = serr
		}
		s.shutdownErr = err
	})
	return s.shutdownErr
}

// local returns this node's status.
func (s *Server) local(ctx context.Context) (Status, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	members, err := s.node.Members(ctx)
	if err != nil {
		return Status{}, err
	}
	pending, err := s.node.Pending(ctx)
	if err != nil {
		return Status{}, err
	}
	st := Status{
		Node: s.node.ID(), Address: s.node.Address(), HTTP: s.addr, Kinds: s.node.Kinds(),
		Members: members, Operators: s.node.Status(), Pending: pending,
		Queued: s.node.Queued(), Buffered: s.node.Buffered(), Streams: s.node.Streams(),
	}
	if s.launcher != nil {
		st.Launched = s.launcher.Launched()
	}
	return st, nil
}

func (s *Server) nodeStatus(w http.ResponseWriter, r *http.Request) {
	st, err := s.local(r.Context())
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, code int, err error) {
	writeJSON(w, code, api.Error{Error: err.Error()})
}
