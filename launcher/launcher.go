// Package launcher starts operator "slugs": when an operator's kind is
// hosted by no node and its manifest names an executable (a node binary
// with the kind compiled in, calling node.Run), a launcher starts that
// executable, which joins the cluster through Consul and hosts the kind.
//
// Local is the local-process launcher: it runs the executable as a child
// process of the node, restarts it with backoff when it exits (up to the
// manifest's retries), and stops it when the operator is killed. The
// Mesos framework (package mesos) is the launcher for real clusters.
//
// Nodes that run a launcher announce the pseudo kind Kind; for each
// operator, the launcher node with the highest rendezvous score starts its
// process, so that several launchers never start the same slug twice.
//
// A launcher runs what manifests name, as the node's user, so it runs only
// what its Policy allows: executables on an allow-list or in a directory
// of slugs (optionally pinned to a SHA-256 digest), with an environment
// from which the variables that make programs load code (LD_PRELOAD,
// PERL5OPT, PYTHONPATH, NODE_OPTIONS, …; see DeniedEnv) are refused. A
// refused operator shows in the status as "refused", with the reason.
// Each operator's process keeps its state in its own directory under
// Config.DataDir, named after the operator, which never leads outside it.
// The node must also require authentication on its control API (package
// sdk refuses Launch otherwise), so that only admins deploy.
package launcher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/cluster"
	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/internal/backoff"
	"github.com/sluicehq/sluice/placement"
	"github.com/sluicehq/sluice/sdk/nodeenv"
	"github.com/sluicehq/sluice/topology"
)

// Kind is announced in the membership by nodes that run a launcher.
const Kind = "sluice.launcher"

// DefaultRetries is used when a manifest leaves retries at 0.
const DefaultRetries = 3

// Config configures a Local launcher.
type Config struct {
	// Node is the id of the node running the launcher.
	Node string
	// Consul and Cluster are handed to launched processes.
	Consul, Cluster string
	// DataDir is where launched processes keep their state
	// (DataDir/<operator>).
	DataDir string
	// Store and Members tell the launcher what is deployed and who hosts
	// what.
	Store   topology.Store
	Members func(ctx context.Context) ([]cluster.Member, error)
	// Interval between reconciliations; 0 means 1 s.
	Interval time.Duration
	// Logger; nil means slog.Default().
	Logger *slog.Logger
	// Policy says which executables may run, with which environment.
	// Required: the zero Policy allows nothing.
	Policy Policy
	// Env is added to every launched process's environment after the
	// manifest's (the control API's security settings, say).
	Env []string
}

// DefaultConfig returns the values that zero fields of a Config mean.
func DefaultConfig() Config { return Config{Interval: time.Second, Logger: slog.Default()} }

// withDefaults fills cfg's zero fields from DefaultConfig.
func (cfg Config) withDefaults() Config {
	d := DefaultConfig()
	if cfg.Interval == 0 {
		cfg.Interval = d.Interval
	}
	if cfg.Logger == nil {
		cfg.Logger = d.Logger
	}
	return cfg
}

// Validate checks cfg (after defaults): every problem names the field and
// the fix.
func (cfg Config) Validate() error {
	cfg = cfg.withDefaults()
	var errs []error
	if cfg.Node == "" {
		errs = append(errs, errors.New("launcher: Config.Node is empty: give the id of the node running the launcher"))
	}
	if cfg.DataDir == "" {
		errs = append(errs, errors.New("launcher: Config.DataDir is empty: give the directory for the launched processes' state"))
	}
	if cfg.Store == nil || cfg.Members == nil {
		errs = append(errs, errors.New("launcher: Config.Store and Config.Members are required"))
	}
	if cfg.Interval <= 0 {
		errs = append(errs, fmt.Errorf("launcher: Config.Interval must be > 0 (0: %v), got %v", DefaultConfig().Interval, cfg.Interval))
	}
	if err := cfg.Policy.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Local launches slugs as local processes. Its methods are safe for
// concurrent use.
type Local struct {
	cfg Config

	mu    sync.Mutex // guards procs
	procs map[string]*proc
	wg    sync.WaitGroup
}

// proc is one launched process and its supervision state.
type proc struct {
	op       string
	exe      string
	cmd      *exec.Cmd
	exited   chan struct{}
	state    string // "starting", "running", "backoff", "failed", "refused", "stopped"
	restarts int
	message  string
	next     time.Time // when to start again after an exit
	spec     topology.OperatorSpec
}

// New returns a launcher after checking cfg; Run starts it.
func New(cfg Config) (*Local, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Local{cfg: cfg.withDefaults(), procs: make(map[string]*proc)}, nil
}

// Run reconciles launched processes with the topology until ctx ends, then
// stops them all.
func (l *Local) Run(ctx context.Context) error {
	t := time.NewTicker(l.cfg.Interval)
	defer t.Stop()
	topo := l.cfg.Store.Watch(ctx)
	for {
		l.reconcile(ctx)
		select {
		case <-ctx.Done():
			l.stopAll()
			return nil
		case <-t.C:
		case _, ok := <-topo:
			if !ok {
				l.stopAll()
				return nil
			}
		}
	}
}

// reconcile starts, restarts and stops processes to match the topology.
func (l *Local) reconcile(ctx context.Context) {
	tp, err := l.cfg.Store.Load(ctx)
	if err != nil {
		l.cfg.Logger.Warn("launcher: cannot read the topology", "error", err)
		return
	}
	members, err := l.cfg.Members(ctx)
	if err != nil {
		return
	}
	var launchers []placement.Node
	for _, m := range members {
		if slices.Contains(m.Kinds, Kind) {
			launchers = append(launchers, placement.Node{ID: m.ID, Kinds: m.Kinds})
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	want := map[string]bool{}
	for _, spec := range tp.Operators {
		if spec.Executable == "" {
			continue
		}
		owner, _ := placement.Owner(placement.Instance{Operator: spec.Meta.Name, Kind: Kind}, launchers)
		if owner != l.cfg.Node {
			continue
		}
		p := l.procs[spec.Meta.Name]
		if p == nil && hostedElsewhere(members, spec.Kind) {
			continue // a node already hosts the kind: nothing to launch
		}
		want[spec.Meta.Name] = true
		if p == nil {
			p = &proc{op: spec.Meta.Name, state: "starting"}
			l.procs[spec.Meta.Name] = p
		}
		if (p.state == "failed" || p.state == "refused") && !p.spec.DeployedAt.Equal(spec.DeployedAt) {
			// A new manifest: try it afresh.
			p.state, p.restarts, p.message, p.next = "starting", 0, "", time.Time{}
		}
		p.spec, p.exe = spec, spec.Executable
		l.supervise(p)
	}
	var stopping []*proc
	for name, p := range l.procs {
		if !want[name] {
			stopping = append(stopping, p)
			delete(l.procs, name)
		}
	}
	l.mu.Unlock()
	for _, p := range stopping {
		l.stop(p) // outside the lock: it may wait for a graceful exit
	}
	l.mu.Lock()
}

// hostedElsewhere reports whether a member hosts kind.
func hostedElsewhere(members []cluster.Member, kind string) bool {
	for _, m := range members {
		if slices.Contains(m.Kinds, kind) {
			return true
		}
	}
	return false
}

// supervise starts p if it is not running and its backoff has passed.
func (l *Local) supervise(p *proc) {
	if p.cmd != nil {
		select {
		case <-p.exited:
		default:
			p.state = "running"
			return
		}
		// It exited.
		retries := p.spec.Retries
		if retries == 0 {
			retries = DefaultRetries
		}
		p.message = exitMessage(p.cmd)
		p.cmd = nil
		if p.restarts >= retries {
			p.state = "failed"
			l.cfg.Logger.Error("launcher: slug keeps failing; giving up", "operator", p.op, "restarts", p.restarts, "last", p.message)
			return
		}
		p.restarts++
		p.state = "backoff"
		p.next = time.Now().Add(backoff.Nth(p.restarts, time.Second, 30*time.Second))
		l.cfg.Logger.Warn("launcher: slug exited; restarting", "operator", p.op, "restarts", p.restarts, "at", p.next.Format(time.TimeOnly), "reason", p.message)
	}
	if p.state == "failed" || p.state == "refused" || time.Now().Before(p.next) {
		return
	}
	if err := l.start(p); err != nil {
		p.message = err.Error()
		p.state = "failed"
		if errors.Is(err, ErrNotAllowed) || errors.Is(err, ErrDigestMismatch) || errors.Is(err, ErrEnvDenied) || errors.Is(err, ErrUnsafeName) {
			p.state = "refused" // until the operator is deployed again
		}
		l.cfg.Logger.Error("launcher: cannot start slug", "operator", p.op, "executable", p.exe, "state", p.state, "error", err)
	}
}

// start runs p's executable, if the policy allows it and its environment.
func (l *Local) start(p *proc) error {
	exe, err := l.cfg.Policy.Resolve(p.exe)
	if err != nil {
		return err
	}
	if problems := l.cfg.Policy.CheckEnv(p.spec.Env); len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrEnvDenied, strings.Join(problems, "; "))
	}
	dataDir, err := operatorDir(l.cfg.DataDir, p.op)
	if err != nil {
		return err
	}
	id := fmt.Sprintf("%s-%s-%d", p.op, l.cfg.Node, p.restarts)
	cmd := exec.Command(exe)
	cmd.Env = os.Environ()
	for _, k := range slices.Sorted(maps.Keys(p.spec.Env)) {
		cmd.Env = append(cmd.Env, k+"="+p.spec.Env[k])
	}
	// The launcher's own settings come last: for a name given twice, the
	// last wins.
	cmd.Env = append(cmd.Env,
		nodeenv.Consul+"="+l.cfg.Consul,
		nodeenv.Cluster+"="+l.cfg.Cluster,
		nodeenv.Host+"="+p.spec.Kind,
		nodeenv.HostOnly+"=1",
		nodeenv.NodeID+"="+id,
		nodeenv.DataDir+"="+dataDir,
		nodeenv.HTTP+"=127.0.0.1:0",
		nodeenv.Bind+"=127.0.0.1:0",
		nodeenv.Launch+"=", // no launcher in a launched process
	)
	cmd.Env = append(cmd.Env, l.cfg.Env...)
	if err := os.MkdirAll(dataDir, 0o750); err != nil {
		return fmt.Errorf("launcher data dir: %w", err)
	}
	logs, err := os.OpenFile(dataDir+".log", os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o640)
	if err != nil {
		return fmt.Errorf("launcher log: %w", err)
	}
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		logs.Close()
		return fmt.Errorf("start %s: %w", exe, err)
	}
	p.cmd, p.exited, p.state = cmd, make(chan struct{}), "running"
	exited := p.exited
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		_ = cmd.Wait()
		logs.Close()
		close(exited)
	}()
	l.cfg.Logger.Info("launcher: started slug", "operator", p.op, "executable", exe, "pid", cmd.Process.Pid, "node_id", id)
	return nil
}

// operatorDir returns the directory of operator op under base: base/op,
// for an op that is one local path element other than "." (".." and
// "a/b" would lead elsewhere). Manifest validation refuses such names
// too; this holds whatever reached the topology.
func operatorDir(base, op string) (string, error) {
	if op == "" || op == "." || !filepath.IsLocal(op) || strings.ContainsAny(op, `/\`) || filepath.Base(op) != op {
		return "", fmt.Errorf("%w: %q: an operator's directory must be one element under %s", ErrUnsafeName, op, base)
	}
	dir := filepath.Join(base, op)
	if filepath.Dir(dir) != filepath.Clean(base) {
		return "", fmt.Errorf("%w: %q leads outside %s", ErrUnsafeName, op, base)
	}
	return dir, nil
}

// stop ends p's process: SIGTERM (a graceful leave), SIGKILL after 30 s.
func (l *Local) stop(p *proc) {
	p.state = "stopped"
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
	}
	p.cmd = nil
}

// stopAll stops every process and waits for them.
func (l *Local) stopAll() {
	l.mu.Lock()
	for name, p := range l.procs {
		l.stop(p)
		delete(l.procs, name)
	}
	l.mu.Unlock()
	l.wg.Wait()
}

// Launched describes the processes, for the control API's status.
func (l *Local) Launched() []api.LaunchedView {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]api.LaunchedView, 0, len(l.procs))
	for _, p := range l.procs {
		v := api.LaunchedView{Operator: p.op, Where: l.cfg.Node, State: p.state, Restarts: p.restarts, Message: p.message}
		if p.cmd != nil {
			v.ID = fmt.Sprintf("pid %d", p.cmd.Process.Pid)
		}
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b api.LaunchedView) int { return strings.Compare(a.Operator, b.Operator) })
	return out
}

// exitMessage describes how cmd ended ("exit status 3", "signal: killed").
func exitMessage(cmd *exec.Cmd) string {
	if cmd.ProcessState == nil {
		return "exited"
	}
	return cmd.ProcessState.String()
}
