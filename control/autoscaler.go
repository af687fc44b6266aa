package control

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/sluicehq/sluice/autoscale"
	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/topology"
)

// AutoscaleConfig configures the autoscaler every control server runs
// (docs/autoscaling.md). It gathers the cluster's counters only while some
// deployed operator has autoscale settings.
type AutoscaleConfig struct {
	// Interval is the time between two gathers of every node's status;
	// 0 means DefaultAutoscaleInterval.
	Interval time.Duration
	// Policy tunes the decisions (window, band, skew); zero fields take
	// autoscale.DefaultConfig's.
	Policy autoscale.Config
	// Off turns the autoscaler off on this node: it neither recommends
	// nor, on the leader, scales.
	Off bool
	// NodeCPUs is the cpus of a node, for the node recommendation (a
	// node's capacity is autoscale.PerNode(NodeCPUs, InstancesPerCPU)
	// operator instances); 0 means this process's GOMAXPROCS. Under Mesos
	// the framework sizes its pool with the pool's cpus itself.
	NodeCPUs float64
	// InstancesPerCPU is a node's capacity per cpu; 0 means
	// autoscale.DefaultInstancesPerCPU.
	InstancesPerCPU float64
}

// DefaultAutoscaleInterval is the autoscaler's default sampling interval.
const DefaultAutoscaleInterval = 5 * time.Second

// autoscaleJournal is implemented by nodes that keep the autoscaler's
// decisions in their journal (actors.Node).
type autoscaleJournal interface {
	RecordAutoscaled(operator string, epoch int64, detail string)
}

// autoscaler samples the cluster every interval, feeds the policy and,
// on the member with the lowest id (the leader, like the checkpoint
// coordinator), applies its decisions with topology.Scale through the
// store, unless an operator's settings say dryRun; the leader journals
// and logs each decision that scales or recommends a change. Every node
// computes the decisions, so GET /v1/autoscale answers on any of them.
// Its goroutine is started by Serve and stopped by Shutdown (close).
type autoscaler struct {
	s      *Server
	cfg    AutoscaleConfig
	policy *autoscale.Policy // the loop's goroutine only
	prev   autoscale.Snapshot
	noted  map[string]string // per operator, the last decision journaled (its key)
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	leader string
	latest map[string]api.AutoscaleDecision
	nodes  *api.AutoscaleNodes
}

// startAutoscaler starts s's autoscaler; nil when it is off.
func (s *Server) startAutoscaler() *autoscaler {
	cfg := s.cfg.Autoscale
	if cfg.Off {
		return nil
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultAutoscaleInterval
	}
	a := &autoscaler{s: s, cfg: cfg, policy: autoscale.New(cfg.Policy), noted: map[string]string{},
		latest: map[string]api.AutoscaleDecision{}, done: make(chan struct{})}
	a.ctx, a.cancel = context.WithCancel(context.Background())
	go a.run()
	return a
}

// close stops the loop and waits for it; safe on nil and twice.
func (a *autoscaler) close() {
	if a == nil {
		return
	}
	a.cancel()
	<-a.done
}

// run samples every interval until close.
func (a *autoscaler) run() {
	defer close(a.done)
	t := time.NewTicker(a.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-a.ctx.Done():
			return
		case <-t.C:
			a.tick()
		}
	}
}

// tick gathers the cluster's status once and decides for every operator
// with autoscale settings.
func (a *autoscaler) tick() {
	ctx, cancel := context.WithTimeout(a.ctx, max(a.cfg.Interval, a.s.cfg.Limits.PeerTimeout))
	defer cancel()
	if topo := a.s.node.Topology(); !slices.ContainsFunc(topo.Operators, func(o topology.OperatorSpec) bool { return o.Meta.Autoscale != nil }) {
		a.forgetAll()
		// The node recommendation needs only the parallelism and the
		// members: no gather.
		if members, err := a.s.node.Members(ctx); err == nil {
			nodes := a.recommendNodes(len(members), topo, nil)
			a.mu.Lock()
			a.nodes = nodes
			a.mu.Unlock()
		}
		return
	}
	v, err := a.s.gather(ctx)
	if err != nil || len(v.errs) > 0 {
		// Counters from part of the cluster would read as a drop in load.
		a.s.log.Debug("autoscaler: cluster status incomplete; skipping this sample", "error", err, "unanswered", len(v.errs))
		a.prev = autoscale.Snapshot{}
		return
	}
	now := time.Now()
	cur := snapshot(v, now)
	samples := autoscale.Samples(a.prev, cur)
	a.prev = cur
	leader := leaderID(v)
	leads := leader == a.s.node.ID()
	latest := map[string]api.AutoscaleDecision{}
	decided := map[string]autoscale.Decision{}
	for _, spec := range v.topo.Operators {
		name, settings := spec.Meta.Name, spec.Meta.Autoscale
		if settings == nil {
			a.policy.Forget(name)
			continue
		}
		smp, ok := samples[name]
		if !ok {
			a.mu.Lock()
			if d, ok := a.latest[name]; ok {
				latest[name] = d // the layout is changing: keep the last word
				decided[name] = autoscale.Decision{Current: d.Current, Needed: d.Needed, Skewed: d.Skewed}
			}
			a.mu.Unlock()
			continue
		}
		d := a.policy.Decide(now, name, *settings, smp)
		decided[name] = d
		dv := decisionView(d, settings.DryRun)
		if d.Scale && leads && !settings.DryRun {
			if err := a.apply(ctx, name, d); err != nil {
				dv.Reason += "; applying it failed: " + err.Error()
				a.s.log.Warn("autoscaler: scaling failed", "operator", name, "to", d.Recommended, "error", err)
			} else {
				dv.Applied = true
				a.policy.Applied(name, d.Recommended, now)
			}
		}
		if leads {
			a.note(spec, d, dv)
		}
		latest[name] = dv
	}
	nodes := a.recommendNodes(len(v.members), v.topo, decided)
	a.mu.Lock()
	a.leader, a.latest, a.nodes = leader, latest, nodes
	a.mu.Unlock()
}

// recommendNodes is the node recommendation for members nodes: the
// operators' demand (autoscale.Demand: the decisions' needed instances,
// every other operator's parallelism) against a node's capacity. It only
// reports; the Mesos framework acts on the demand with its own pool's
// capacity and policy.
func (a *autoscaler) recommendNodes(members int, topo topology.Topology, decided map[string]autoscale.Decision) *api.AutoscaleNodes {
	par := map[string]int{}
	for _, spec := range topo.Operators {
		par[spec.Meta.Name] = spec.Meta.Parallelism
	}
	cpus := a.cfg.NodeCPUs
	if cpus <= 0 {
		cpus = float64(runtime.GOMAXPROCS(0))
	}
	instances := autoscale.Demand(par, decided)
	perNode := autoscale.PerNode(cpus, a.cfg.InstancesPerCPU)
	n := &api.AutoscaleNodes{Members: members, Instances: instances, PerNode: perNode, CPUs: cpus, Recommended: autoscale.NodesFor(instances, perNode)}
	switch {
	case n.Recommended > members:
		n.Reason = fmt.Sprintf("the operators need %d instances, more than %d nodes of %d hold: %d nodes", instances, members, perNode, n.Recommended)
	case n.Recommended < members:
		n.Reason = fmt.Sprintf("the operators need %d instances, which %d nodes of %d hold: %d idle", instances, n.Recommended, perNode, members-n.Recommended)
	default:
		n.Reason = fmt.Sprintf("the operators need %d instances, which %d nodes of %d hold", instances, members, perNode)
	}
	return n
}

// apply scales name from d.Current to d.Recommended with check-and-set;
// an operator changed meanwhile (killed, or scaled by someone) is left
// as it is: the next samples tell the policy.
func (a *autoscaler) apply(ctx context.Context, name string, d autoscale.Decision) error {
	_, err := a.s.change(ctx, name, func(t topology.Topology) (topology.Topology, error) {
		spec, ok := t.Find(name)
		if !ok || spec.Meta.Parallelism != d.Current {
			return t, nil
		}
		return t.Scale(name, d.Recommended, time.Now())
	})
	return err
}

// note journals and logs a decision that scaled, or that recommends a
// change (dry-run, a hot spot, waiting out a window) it did not say the
// last time.
func (a *autoscaler) note(spec topology.OperatorSpec, d autoscale.Decision, dv api.AutoscaleDecision) {
	name := spec.Meta.Name
	key := fmt.Sprint(d.Current, d.Recommended, d.Scale, d.Skewed)
	if !dv.Applied && (a.noted[name] == key || (!d.Scale && !d.Skewed)) {
		a.s.log.Debug("autoscaler: decision", "decision", d.String())
		return
	}
	a.noted[name] = key
	detail := d.String()
	if dv.DryRun && d.Scale {
		detail = "dry run, not applied: " + detail
	}
	a.s.log.Info("autoscaler: decision", "operator", name, "applied", dv.Applied, "decision", detail)
	if j, ok := a.s.node.(autoscaleJournal); ok {
		j.RecordAutoscaled(name, spec.Epoch, detail)
	}
}

// forgetAll drops every history: no operator is autoscaled.
func (a *autoscaler) forgetAll() {
	a.prev = autoscale.Snapshot{}
	a.mu.Lock()
	defer a.mu.Unlock()
	for name := range a.latest {
		a.policy.Forget(name)
	}
	clear(a.latest)
}

// status answers GET /v1/autoscale.
func (a *autoscaler) status(self string) api.AutoscaleStatus {
	st := api.AutoscaleStatus{Node: self, Operators: []api.AutoscaleDecision{}}
	if a == nil {
		return st
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	st.Leader, st.Nodes = a.leader, a.nodes
	for _, name := range slices.Sorted(maps.Keys(a.latest)) {
		st.Operators = append(st.Operators, a.latest[name])
	}
	return st
}

func (s *Server) autoscaleStatus(w http.ResponseWriter, r *http.Request) {
	if !s.request(w, r, nil) {
		return
	}
	writeJSON(w, http.StatusOK, s.autoscaler.status(s.node.ID()))
}

// leaderID returns the member of v with the lowest id, whose autoscaler
// applies decisions.
func leaderID(v view) string {
	var id string
	for _, m := range v.members {
		if id == "" || m.ID < id {
			id = m.ID
		}
	}
	return id
}

// snapshot reads the counters of every deployed operator's instances from
// the nodes' statuses in v, taken at.
func snapshot(v view, at time.Time) autoscale.Snapshot {
	snap := autoscale.Snapshot{At: at}
	for _, spec := range v.topo.Operators {
		m := spec.Meta
		op := autoscale.OperatorCounters{Name: m.Name, Parallelism: m.Parallelism, KeyGroups: m.KeyGroups, Epoch: spec.Epoch, Outputs: m.Outputs}
		for _, in := range m.Inputs {
			op.Inputs = append(op.Inputs, in.Stream)
		}
		for _, st := range v.nodes {
			for _, o := range st.Operators {
				if o.Name != m.Name {
					continue
				}
				for _, in := range o.Instances {
					op.Instances = append(op.Instances, autoscale.InstanceCounters{Node: in.Node, Index: in.Index, Epoch: in.Epoch,
						FirstGroup: in.FirstGroup, EndGroup: in.EndGroup, Running: in.State == "running",
						Processed: in.Processed, Produced: in.Produced, Busy: time.Duration(in.BusyNanos), Blocked: time.Duration(in.BlockedNanos),
						Queued: in.Queued})
				}
			}
		}
		snap.Operators = append(snap.Operators, op)
	}
	return snap
}

// decisionView converts a decision for the API.
func decisionView(d autoscale.Decision, dryRun bool) api.AutoscaleDecision {
	in := d.Inputs
	return api.AutoscaleDecision{Operator: d.Operator, At: d.At, Current: d.Current, Recommended: d.Recommended, Needed: d.Needed, Scale: d.Scale,
		DryRun: dryRun, Skewed: d.Skewed, Reason: d.Reason,
		Inputs: api.AutoscaleInputs{Samples: in.Samples, Window: in.Window, InputRate: in.InputRate, Rate: in.Rate, TrueRate: in.TrueRate,
			Busy: in.Busy, Blocked: in.Blocked, Utilization: in.Utilization, Queued: in.Queued, HotInstance: in.HotInstance,
			HotGroups: in.HotGroups, HotBusy: in.HotBusy, OthersBusy: in.OthersBusy}}
}
