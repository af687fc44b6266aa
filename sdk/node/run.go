package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/actors"
	"github.com/sluicehq/sluice/actors/transport"
	"github.com/sluicehq/sluice/checkpoint"
	"github.com/sluicehq/sluice/cluster/consul"
	"github.com/sluicehq/sluice/console"
	"github.com/sluicehq/sluice/control"
	"github.com/sluicehq/sluice/creds"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/launcher"
	"github.com/sluicehq/sluice/mesos/mesosstatus"
	"github.com/sluicehq/sluice/objstore/storeurl"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/telemetry"
	"github.com/sluicehq/sluice/topology"
	tconsul "github.com/sluicehq/sluice/topology/consul"
	tpebble "github.com/sluicehq/sluice/topology/pebble"
)

// Config configures the runtime in this process. The zero value runs the
// embedded mode: one process, no Consul, state in "./sluice-data".
type Config struct {
	// NodeConfig holds the node's own knobs, promoted to Config
	// (cfg.DataDir): NodeID (empty: the host name), DataDir (empty:
	// "./sluice-data"), Logger (nil: slog.Default()), CommitInterval,
	// BatchSize, RemoteBatchSize, BatchBytes, Credits, RemoteCredits,
	// BufferBatches (batching and backpressure), MaxRecordBytes (the
	// largest record Produce takes: sdk.ErrRecordTooLarge), NoSync (commit
	// without fsync: tests, benchmarks), Host (the operators, by name, this process hosts in a cluster; empty:
	// all), OnEvent (instance and membership events), StateLog (e.g.
	// kafka.StateLog: at least once, state that survives a crash) and
	// AtLeastOnce (the old spelling of Guarantee: AtLeastOnce). The node's
	// collaborators (cluster membership, topology store, checkpoint store,
	// observer, announced kinds) are not settings: Start builds them from
	// the settings below.
	NodeConfig
	// Wasm configures the node's WebAssembly runtime (package wasmop):
	// an operator deployed with runtime: wasm (core.WasmKind) runs its
	// module here, within these limits (zero fields: wasmop's defaults:
	// 64 MiB per instance, 1 s per call; compiled code cached under
	// DataDir/wasm-cache). NoWasm turns it off (the node then does not
	// announce core.WasmKind).
	Wasm   WasmConfig
	NoWasm bool
	// StopTimeout bounds how long Run waits for in-flight records (and, in a
	// cluster, for the handoff of this node's instances) on shutdown; 0
	// means 30 s.
	StopTimeout time.Duration

	// Consul is the address of a Consul agent (e.g. "127.0.0.1:8500").
	// When set, the process joins the cluster ClusterName and runs its
	// share of the operators' instances; when empty it runs all of them.
	Consul string
	// ClusterName is the Consul service name of the cluster; empty means
	// "sluice".
	ClusterName string
	// Bind is the host:port for node-to-node traffic in a cluster; empty
	// means "127.0.0.1:0" (a free port on loopback).
	Bind string
	// Advertise is the host:port other nodes use to reach Bind, if different.
	Advertise string
	// HTTP is the address of the control API (see package control); empty
	// means none, ":0" a free port.
	HTTP string
	// Version is announced in the cluster membership (sluice status
	// shows it); empty means BuildVersion().
	Version string
	// Settle delays acting on a cluster membership change, so that changes
	// arriving together are applied together; 0 means 200 ms.
	Settle time.Duration
	// Deploy lists which of the given operators to deploy when the
	// program first starts; nil means all of them. Later starts never
	// redeploy a killed one, nor change one changed through the control
	// API, but update one still deployed from the code whose metadata in
	// the code changed (a new Parallelism rescales it). The others are only hosted, ready for "sluice
	// deploy". HostOnly deploys none (an operator "slug" started by a
	// launcher).
	Deploy   []string
	HostOnly bool
	// Launch runs a local launcher in this process (cluster mode: Validate
	// refuses it without Consul, which an embedded node would ignore): it
	// starts the executable of deployed operators whose kind no node hosts
	// (see package launcher), keeping their state under DataDir/launched.
	// It needs a control API (HTTP) that requires authentication (see
	// ControlSecurity) and a LaunchPolicy that allows some executable;
	// Start fails otherwise.
	Launch bool
	// ControlSecurity says who may use the control API: TLS, tokens,
	// client certificates. nil means ControlSecurityFromEnv (the
	// SLUICE_CONTROL_* variables). Without authentication the control API
	// serves on a loopback address only, accepts no operator with an
	// executable, and Launch is refused.
	ControlSecurity *ControlSecurity
	// NodeSecurity configures mutual TLS between nodes (cluster mode): the
	// cluster CA and this node's certificate, named after NodeID. nil means
	// NodeSecurityFromEnv (the SLUICE_NODE_* variables). A cluster node
	// without certificates is refused (ErrInsecureCluster) unless
	// NodeSecurity.Insecure (-node-insecure): its traffic would be neither
	// encrypted nor authenticated.
	NodeSecurity *NodeSecurity
	// LaunchPolicy says which executables Launch may start and which
	// environment variables manifests may give them; nil means
	// LaunchPolicyFromEnv. Its environment rules also apply to every
	// deploy through this node's control API.
	LaunchPolicy *LaunchPolicy
	// KeepRunning makes Run keep running once every source finished (its
	// Poll returned ErrEndOfStream) and everything drained; by default an
	// embedded Run then stops and returns. (A cluster node always keeps
	// running until stopped.)
	KeepRunning bool
	// Guarantee is what a crash may cost (README "Guarantees"). The zero
	// value is ExactlyOnce: consistent checkpoints of all state, kept in
	// Checkpoints, and two-phase commit with sinks; every source must be
	// Resumable and every Flusher a Committer. AtLeastOnce tracks
	// durability per edge instead (replayable sources, optional StateLog);
	// NoGuarantee tracks nothing.
	Guarantee sdk.Guarantee
	// Checkpoints is where exactly-once checkpoints are kept: a directory
	// (a plain path or file:///path; also a shared mount) or S3-compatible
	// storage (s3://bucket/prefix, endpoint and credentials from the
	// AWS_* variables). Empty means DataDir/checkpoint-store when
	// embedded; a cluster needs a store every node reaches.
	Checkpoints string
	// CheckpointInterval is the time between two checkpoints; 0 means 1 s.
	CheckpointInterval time.Duration
	// CheckpointsKept is how many complete checkpoints are kept; 0 means 3.
	// Savepoints (sluice checkpoint) are kept besides, until deleted by
	// hand.
	CheckpointsKept int
	// RestoreFrom, when set, is the id of a complete checkpoint (a
	// savepoint, say: sluice checkpoints lists them) the cluster starts
	// from, rather than the newest: newer checkpoints are abandoned. Only
	// the cluster's first start from it does; once a node started from it,
	// later starts resume from the newest checkpoint again, so the setting
	// may stay. Start a stopped cluster with it (every node alike). The
	// operators' parallelism may differ from the checkpoint's: key groups
	// are redistributed.
	RestoreFrom string
	// Telemetry configures OpenTelemetry traces and metrics (see package
	// telemetry); nil means TelemetryFromEnv's configuration.
	Telemetry *TelemetryConfig
	// Autoscale tunes the autoscaler of the control API (HTTP; see
	// docs/autoscaling.md): its sampling interval and policy, or Off. The
	// zero value samples every 5 s with the policy's defaults.
	Autoscale AutoscaleConfig
}

// AutoscaleConfig tunes the autoscaler a runtime's control API runs
// (Config.Autoscale): Interval between two samples of the cluster, Policy
// (averaging window, samples, hysteresis band, skew), Off.
type AutoscaleConfig = control.AutoscaleConfig

func (c Config) node() actors.Config {
	cfg := c.NodeConfig.actors()
	cfg.AtLeastOnce = c.guarantee() == sdk.AtLeastOnce
	if c.Launch {
		cfg.Announce = []string{launcher.Kind}
	}
	return cfg
}

// guarantee returns the effective guarantee.
func (c Config) guarantee() sdk.Guarantee {
	if c.AtLeastOnce && c.Guarantee == sdk.ExactlyOnce {
		return sdk.AtLeastOnce
	}
	return c.Guarantee
}

// checkpoints opens the checkpoint store of an exactly-once runtime.
func (c Config) checkpoints(ctx context.Context) (*actors.CheckpointConfig, error) {
	if c.guarantee() != sdk.ExactlyOnce {
		return nil, nil
	}
	setting := c.Checkpoints
	if setting == "" {
		if c.Consul != "" {
			return nil, errors.New("node: exactly-once in a cluster needs a checkpoint store every node reaches: set Checkpoints " +
				"(a shared directory, or s3://bucket/prefix) or choose Guarantee: AtLeastOnce or NoGuarantee")
		}
		dataDir := c.DataDir
		if dataDir == "" {
			dataDir = actors.DefaultConfig().DataDir
		}
		abs, err := filepath.Abs(filepath.Join(dataDir, "checkpoint-store"))
		if err != nil {
			return nil, fmt.Errorf("node: checkpoint store: %w", err)
		}
		setting = abs
	}
	obj, err := storeurl.Open(ctx, setting)
	if err != nil {
		return nil, fmt.Errorf("node: checkpoint store %q: %w", setting, err)
	}
	ck := &actors.CheckpointConfig{Store: checkpoint.NewStore(obj), Interval: c.CheckpointInterval, Keep: c.CheckpointsKept}
	if c.RestoreFrom != "" {
		ck.RestoreFrom, _ = strconv.ParseUint(c.RestoreFrom, 10, 64) // checked by Validate
	}
	return ck, nil
}

// Runtime is a running set of operators in this process.
type Runtime struct {
	node       *actors.Node
	http       *control.Server
	launcher   *launcher.Local
	stopLaunch context.CancelFunc
	launchDone chan struct{}
	telemetry  *telemetry.Telemetry
	wasm       *wasmRuntime // nil with NoWasm
}

// Start validates cfg (Config.Validate) and the operators' metadata and
// starts them. Invalid metadata fails with a *MetadataError naming the
// operator and the field. With
// Config.Consul set it joins the cluster first and fails fast when Consul
// cannot be reached.
func Start(ctx context.Context, cfg Config, operators ...sdk.Factory) (*Runtime, error) {
	if len(operators) == 0 {
		return nil, errors.New("node: start: no operators given")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ncfg := cfg.node()
	ck, err := cfg.checkpoints(ctx)
	if err != nil {
		return nil, err
	}
	ncfg.Checkpoints = ck
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	sec, policy, err := security(cfg)
	if err != nil {
		return nil, err
	}
	var (
		srv *control.Server
		lis net.Listener
	)
	if cfg.HTTP != "" {
		ccfg := control.Config{Addr: cfg.HTTP, Logger: logger, Security: sec, CheckManifest: policy.CheckManifest, Autoscale: cfg.Autoscale}
		if srv, lis, err = control.Listen(ccfg); err != nil {
			return nil, fmt.Errorf("node: start: %w", err)
		}
	}
	if ns := nodeSecurity(cfg); cfg.Consul != "" && !ns.Enabled() && !ns.Insecure {
		closeListener(lis)
		return nil, fmt.Errorf("%w: without them its actor port takes records, state and membership messages from whoever reaches it: "+
			"give -node-ca, -node-cert and -node-key (sluice certs ca, sluice certs node; $%s, $%s, $%s), "+
			"or -node-insecure ($%s=1) on a network only the cluster reaches (docs/security.md, \"Between nodes\")",
			ErrInsecureCluster, transport.EnvNodeCA, transport.EnvNodeCert, transport.EnvNodeKey, transport.EnvNodeInsecure)
	}
	if cfg.Consul != "" {
		d, err := consul.New(consul.Config{Address: cfg.Consul, Service: clusterName(cfg), Logger: logger})
		if err != nil {
			closeListener(lis)
			return nil, fmt.Errorf("node: start: %w", err)
		}
		if sec.Authenticated() {
			warnAnonymousConsul(ctx, logger, cfg.Consul)
		}
		ncfg.Cluster = &actors.ClusterConfig{Discovery: d, BindAddr: cfg.Bind, AdvertiseAddr: cfg.Advertise, Version: cmp.Or(cfg.Version, BuildVersion()),
			Settle: cfg.Settle, Security: nodeSecurity(cfg)}
		if srv != nil {
			ncfg.Cluster.HTTPAddr = srv.Addr()
		}
	}
	if cfg.Consul != "" {
		store, err := guardedStore(cfg, logger)
		if err != nil {
			closeListener(lis)
			return nil, fmt.Errorf("node: start: %w", err)
		}
		ncfg.Store = store
	}
	ncfg.LocalStore = tpebble.Local // the embedded mode's store, unless Store is set
	kinds, seed, err := actors.Kinds(operators...)
	if err != nil {
		closeListener(lis)
		return nil, err
	}
	seed = deployed(cfg, seed)
	tel, err := startTelemetry(ctx, cfg, srv)
	if err != nil {
		closeListener(lis)
		return nil, err
	}
	ncfg.Observer = tel.Observer()
	if srv != nil {
		showLatencies(srv, tel)
	}
	var wasm *wasmRuntime
	if !cfg.NoWasm {
		wcfg := cfg.Wasm
		if wcfg.CacheDir == "" { // compiled code kept across restarts of the node
			wcfg.CacheDir = filepath.Join(dataDir(cfg), "wasm-cache")
		}
		wasm = &wasmRuntime{cfg: wcfg}
		ncfg.Runtimes = map[core.Runtime]core.MetaFactory{core.RuntimeWasm: wasm.factory}
	}
	n, err := actors.StartNode(ctx, ncfg, kinds, seed)
	if err != nil {
		closeListener(lis)
		_ = tel.Shutdown(context.Background())
		return nil, err
	}
	tel.Attach(n)
	rt := &Runtime{node: n, http: srv, telemetry: tel, wasm: wasm}
	if cfg.Launch && cfg.Consul != "" {
		rt.launcher, err = launcher.New(launcher.Config{
			Node: n.ID(), Consul: cfg.Consul, Cluster: clusterName(cfg), DataDir: filepath.Join(dataDir(cfg), "launched"),
			Store: n.Store(), Members: n.Members, Logger: logger, Policy: policy, Env: append(sec.Environ(), nodeSecurity(cfg).Environ()...),
		})
		if err != nil {
			closeListener(lis)
			return nil, errors.Join(fmt.Errorf("node: start: %w", err), n.Stop(context.Background()), tel.Shutdown(context.Background()))
		}
		lctx, cancel := context.WithCancel(context.Background())
		rt.stopLaunch, rt.launchDone = cancel, make(chan struct{})
		go func() {
			defer close(rt.launchDone)
			_ = rt.launcher.Run(lctx)
		}()
		if srv != nil {
			srv.SetLauncher(rt.launcher)
		}
	}
	if srv != nil {
		if cfg.Consul != "" {
			if read, err := mesosstatus.Reader(cfg.Consul, clusterName(cfg)); err != nil {
				logger.Warn("the status will not show Mesos tasks", "error", err)
			} else {
				srv.SetExternalStatus(read)
			}
		}
		srv.Serve(lis, n)
		logger.Info("control API and web console", "api", srv.URL(), "console", srv.URL()+console.Path)
	}
	return rt, nil
}

// guardedStore returns the cluster's topology store in Consul, guarded by a
// copy of the last topology in the data directory: a Consul that lost its
// data is re-seeded from it, never followed (see topology.Guard).
func guardedStore(cfg Config, logger *slog.Logger) (*topology.Guard, error) {
	s, err := tconsul.New(cfg.Consul, clusterName(cfg), logger)
	if err != nil {
		return nil, err
	}
	local := topology.NewFileCopy(filepath.Join(dataDir(cfg), topology.CopyFile), tconsul.Key(clusterName(cfg)))
	var opts []topology.GuardOption
	if ns := nodeSecurity(cfg); ns.Enabled() {
		// Whoever can write the key in Consul could deploy and kill: with
		// node certificates, only what a node of the cluster signed is
		// acted on (issue 31).
		tc := ns.TLS
		tc.Logger = logger
		src, err := creds.Load(tc)
		if err != nil {
			return nil, fmt.Errorf("node certificates for signing the topology: %w", err)
		}
		opts = append(opts, topology.WithSealer(topology.NodeSealer{Creds: src}))
	}
	return topology.NewGuard(s, local, logger, opts...)
}

// dataDir returns the configured data directory or its default.
func dataDir(cfg Config) string {
	if cfg.DataDir == "" {
		return actors.DefaultConfig().DataDir
	}
	return cfg.DataDir
}

// clusterName returns the configured cluster name or its default.
func clusterName(cfg Config) string {
	if cfg.ClusterName == "" {
		return "sluice"
	}
	return cfg.ClusterName
}

// deployed filters the program's operators by Config.Deploy and HostOnly.
func deployed(cfg Config, seed []topology.OperatorSpec) []topology.OperatorSpec {
	if cfg.HostOnly {
		return nil
	}
	if cfg.Deploy == nil {
		return seed
	}
	var out []topology.OperatorSpec
	for _, s := range seed {
		if slices.Contains(cfg.Deploy, s.Meta.Name) {
			out = append(out, s)
		}
	}
	return out
}

func closeListener(l net.Listener) {
	if l != nil {
		_ = l.Close()
	}
}

// Produce sends rec to stream from outside any operator. It returns once
// rec is sent or buffered, blocking while a reader of the stream has its
// whole credit window waiting (backpressure) or until ctx is done.
func (r *Runtime) Produce(ctx context.Context, stream string, rec sdk.Record) error {
	return r.node.Produce(ctx, stream, rec)
}

// Subscribe starts reading stream from outside the operators (programs,
// tests, tools): range over the returned Subscription's All, or call Next.
// It deploys a reader operator "sluice-tail-<random>" whose one instance
// runs in this process and returns once records produced to stream (on
// this node) reach it. The subscription sees every record produced to the
// stream from then on, once (after an exactly-once rollback, records
// processed again are seen again), in the order each producer produced
// them. With durability tracking (AtLeastOnce), records held because the
// stream had no reader at all go to the first reader, which may be the
// subscription. A reader that does not keep up holds the stream's
// producers back like any slow operator (credits; under ExactlyOnce the
// checkpoints wait for it too); nothing is dropped. Cancelling ctx or
// Close ends the subscription and removes the reader operator, purging its
// state; Stop closes subscriptions left open.
func (r *Runtime) Subscribe(ctx context.Context, stream string) (*Subscription, error) {
	return r.node.Subscribe(ctx, stream)
}

// Drain hands this process's instances and their state to the other
// nodes, live, and keeps it running as a member nothing is placed on,
// until Stop (actors.Node.Drain); a node about to be removed (the Mesos
// framework's pool shrinking) is drained first. It returns an error when
// the node is not in a cluster, or ctx ends before the drain is done.
func (r *Runtime) Drain(ctx context.Context) error { return r.node.Drain(ctx) }

// Status describes every operator and its instances in this process.
func (r *Runtime) Status() []OperatorStatus { return r.node.Status() }

// Node returns the underlying runtime node.
func (r *Runtime) Node() *actors.Node { return r.node }

// Failed is closed when the node's state database failed and the node
// takes no more work: the process should exit (see Run).
func (r *Runtime) Failed() <-chan struct{} { return r.node.Failed() }

// HTTPAddr returns the control API's address, or "" when it is off.
func (r *Runtime) HTTPAddr() string {
	if r.http == nil {
		return ""
	}
	return r.http.Addr()
}

// Stop stops the runtime: in a cluster this process first hands its
// instances and their state to the other nodes; then sources stop,
// in-flight records finish (until ctx is done), all state is committed and
// the database closed. It is safe to call twice.
func (r *Runtime) Stop(ctx context.Context) error {
	if r.stopLaunch != nil {
		r.stopLaunch() // launched processes leave the cluster first
		<-r.launchDone
	}
	err := r.node.Stop(ctx)
	if r.wasm != nil {
		err = errors.Join(err, r.wasm.close(ctx)) // after the node: its operators stopped
	}
	if r.http != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err = errors.Join(err, r.http.Shutdown(sctx))
	}
	return errors.Join(err, r.stopTelemetry())
}

// waitFinished returns when ctx is done or the runtime's bounded streams
// finished (actors.Node.Finished).
func (r *Runtime) waitFinished(ctx context.Context) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.Failed():
			return
		case <-tick.C:
			qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			done := r.node.Finished(qctx)
			cancel()
			if done {
				return
			}
		}
	}
}

// Run starts the operators and runs them until ctx is cancelled or the
// process receives SIGINT or SIGTERM, then stops cleanly. Embedded (no
// Consul), it also returns once the streams are bounded and done: every
// source finished (Poll returned ErrEndOfStream), every operator reading
// them finished (their event-time timers fired) and nothing is in flight;
// under exactly-once the stop's final checkpoint commits the sinks' output
// first. Config.KeepRunning keeps it running instead.
//
// If the node's state database fails (a full disk hit a commit: see
// status.Health), Run returns an error wrapping ErrNodeFailed at once,
// without stopping: the caller should exit the process (non-zero), so that
// it restarts from what was committed, or checkpointed, and in a cluster
// its instances move to the other nodes meanwhile.
func Run(ctx context.Context, cfg Config, operators ...sdk.Factory) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	rt, err := Start(ctx, cfg, operators...)
	if err != nil {
		return err
	}
	if cfg.KeepRunning || cfg.Consul != "" {
		select {
		case <-ctx.Done():
		case <-rt.Failed():
		}
	} else {
		rt.waitFinished(ctx) // also returns when the node failed
	}
	select {
	case <-rt.Failed():
		return fmt.Errorf("%w: %s", ErrNodeFailed, rt.node.Health().Reason)
	default:
	}
	timeout := cfg.StopTimeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	sctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := rt.Stop(sctx); err != nil {
		return fmt.Errorf("node: stop: %w", err)
	}
	return nil
}

// warnAnonymousConsul logs an error when the Consul agent at addr takes
// writes without a token: its KV store and catalog then let anyone who
// reaches it change the topology and the membership, which the control
// API's credentials were set to prevent.
func warnAnonymousConsul(ctx context.Context, logger *slog.Logger, addr string) {
	anon, err := consul.AnonymousWrites(ctx, consul.Config{Address: addr})
	switch {
	case err != nil:
		logger.Warn("node: could not check whether Consul takes writes without a token", "consul", addr, "error", err)
	case anon:
		logger.Error("node: INSECURE: Consul takes writes without a token, so anyone who reaches it can deploy, kill and take over instances "+
			"whatever the control API's tokens say: enable Consul's ACLs with default_policy \"deny\" and give the nodes a token "+
			"(CONSUL_HTTP_TOKEN; docs/security.md, \"Consul\")", "consul", addr)
	}
}
