package mesos

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/autoscale"
	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/mesos/mesosstatus"
)

// Node pool autoscaling: the size of the pool with Autoscale settings
// follows the operators' demand. Every NodeScaleInterval the leader asks a
// node of the cluster for its node recommendation (GET /v1/autoscale:
// the operator instances needed, autoscale.Demand) and feeds an
// autoscale.NodePolicy with the pool's own capacity per node,
// autoscale.PerNode(cpus, instances per cpu):
//
//   - grow: the pool's target goes up, and the machine launches the new
//     slots from the next offers that fit (cpus, mem, disk, ports), as any
//     pool's;
//   - shrink: one node at a time, the task of the pool's highest slot (the
//     one a smaller pool drops): its node is drained first (POST
//     /v1/node/drain: its instances move to the others, live, with their
//     state), then the target goes down by one and the machine kills the
//     task, whose node then stops at once. A failed drain shrinks nothing;
//     the next decision tries again.
//
// The target lives in the leader's memory; a new leader starts from the
// slots with live tasks (adoptTargets), within the pool's bounds.

// newNodeClient returns the client of the nodes' control APIs and its
// scheme: https trusting the CA in the PEM file caFile, or plain http when
// caFile is empty.
func newNodeClient(caFile string) (*http.Client, string, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	scheme := "http"
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, "", fmt.Errorf("mesos: the nodes' control CA (NodeCA): %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, "", fmt.Errorf("mesos: the nodes' control CA (NodeCA): no PEM certificate in %s", caFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		scheme = "https"
	}
	return &http.Client{Transport: tr}, scheme, nil
}

// drainTimeout is how long one drain request waits (the node's answer
// must come within its control API's write timeout, 60 s by default).
const drainTimeout = 50 * time.Second

// poolsWithTargets returns the desired pools with the autoscaled one's
// Instances set to its target. s.mu must be held.
func (s *Scheduler) poolsWithTargets() []Pool {
	if len(s.target) == 0 {
		return s.pools
	}
	out := slices.Clone(s.pools)
	for i := range out {
		if n, ok := s.target[out[i].Name]; ok && out[i].Autoscale != nil {
			out[i].Instances = n
		}
	}
	return out
}

// keepTargets keeps the targets of the pools still autoscaled, within
// their (maybe new) bounds. s.mu must be held.
func (s *Scheduler) keepTargets() {
	for name, n := range s.target {
		i := slices.IndexFunc(s.pools, func(p Pool) bool { return p.Name == name && p.Autoscale != nil })
		if i < 0 {
			delete(s.target, name)
			continue
		}
		s.target[name] = s.pools[i].Autoscale.clamp(n)
	}
}

// adoptTargets sets the target of an autoscaled pool that has none yet to
// its slots with live tasks (a new leader keeps the size its predecessor
// grew or shrank the pool to), within its bounds; a pool without live
// tasks starts at its Instances.
func (s *Scheduler) adoptTargets(live map[string]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.pools {
		if p.Autoscale == nil {
			continue
		}
		if _, ok := s.target[p.Name]; ok {
			continue
		}
		n := p.Instances
		if l := live[p.Name]; l > 0 {
			n = l
		}
		if s.target == nil {
			s.target = map[string]int{}
		}
		s.target[p.Name] = p.Autoscale.clamp(n)
	}
}

// liveSlots counts, per pool, the slots with a live task.
func (m *machine) liveSlots() map[string]int {
	slots := map[slotKey]bool{}
	for _, t := range m.tasks {
		if !t.terminal() && !t.kill {
			slots[t.key] = true
		}
	}
	out := map[string]int{}
	for k := range slots {
		out[k.pool]++
	}
	return out
}

// setTarget sets pool's target and tells the leader loop.
func (s *Scheduler) setTarget(pool string, n int) {
	s.mu.Lock()
	if s.target == nil {
		s.target = map[string]int{}
	}
	s.target[pool] = n
	s.mu.Unlock()
	select {
	case s.poolsChanged <- struct{}{}:
	default:
	}
}

// autoscaledPool returns the autoscaled pool with its target as
// Instances, if there is one.
func (s *Scheduler) autoscaledPool() (Pool, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.poolsWithTargets() {
		if p.Autoscale != nil {
			return p, true
		}
	}
	return Pool{}, false
}

// nodeScaler is one leadership term's pool autoscaler: its goroutine
// (scaleNodes) owns it.
type nodeScaler struct {
	s      *Scheduler
	policy autoscale.NodePolicy
	pool   string // the pool the policy has history of
	last   string // the last decision logged
}

// scaleNodes runs the pool autoscaler every NodeScaleInterval until ctx
// ends.
func (s *Scheduler) scaleNodes(ctx context.Context) {
	ns := &nodeScaler{s: s}
	defer s.nodeClient.CloseIdleConnections()
	t := time.NewTicker(s.cfg.NodeScaleInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := ns.tick(ctx, time.Now()); err != nil && ctx.Err() == nil {
				s.log.Warn("mesos: pool autoscaling", "err", err)
			}
		}
	}
}

// tick decides once and carries the decision out.
func (ns *nodeScaler) tick(ctx context.Context, now time.Time) error {
	s := ns.s
	p, ok := s.autoscaledPool()
	if !ok {
		return nil
	}
	if p.Name != ns.pool {
		ns.policy, ns.pool = autoscale.NodePolicy{}, p.Name
	}
	st := s.Status()
	if st.Role != mesosstatus.RoleLeader {
		return nil
	}
	rec, err := ns.recommendation(ctx, st)
	if err != nil {
		return err
	}
	a := p.Autoscale
	perNode := autoscale.PerNode(p.CPUs, a.InstancesPerCPU)
	// Members outside the pool hold instances too, at the capacity the
	// cluster reports for a node.
	inPool := 0
	for _, ts := range st.Tasks {
		if ts.Pool == p.Name && ts.State == "TASK_RUNNING" {
			inPool++
		}
	}
	fixed := max(0, rec.Members-inPool) * rec.PerNode
	d := ns.policy.Decide(now, autoscale.NodeSpec{Min: a.Min, Max: a.Max, ScaleDownAfter: a.ScaleDownAfter, CoolDown: a.CoolDown},
		p.Instances, rec.Instances, perNode, fixed)
	if key := fmt.Sprint(d.Current, d.Recommended, d.Scale); key != ns.last {
		ns.last = key
		s.log.Info("mesos: pool autoscaling", "pool", p.Name, "decision", d.String())
	}
	switch {
	case !d.Scale:
		return nil
	case d.Recommended > d.Current:
		s.setTarget(p.Name, d.Recommended)
		ns.policy.Applied(now)
		s.log.Info("mesos: pool grown", "pool", p.Name, "from", d.Current, "to", d.Recommended)
		return nil
	}
	// Shrink by one: drain the node of the highest slot first.
	victim := slices.IndexFunc(st.Tasks, func(ts mesosstatus.TaskStatus) bool {
		return ts.Pool == p.Name && ts.Instance == d.Current-1 && ts.ID != ""
	})
	if victim >= 0 && st.Tasks[victim].State == "TASK_RUNNING" {
		ts := st.Tasks[victim]
		if err := ns.drain(ctx, ts); err != nil {
			return fmt.Errorf("mesos: shrinking pool %s: draining node %s first: %w", p.Name, ts.ID, err)
		}
		s.log.Info("mesos: node drained", "pool", p.Name, "node", ts.ID)
	}
	s.setTarget(p.Name, d.Current-1)
	ns.policy.Applied(time.Now())
	s.log.Info("mesos: pool shrunk", "pool", p.Name, "from", d.Current, "to", d.Current-1)
	return nil
}

// recommendation asks the pool's running nodes, in turn, for the
// cluster's node recommendation, and returns the first answer.
func (ns *nodeScaler) recommendation(ctx context.Context, st mesosstatus.Status) (api.AutoscaleNodes, error) {
	var errs []error
	for _, ts := range st.Tasks {
		if ts.State != "TASK_RUNNING" || len(ts.Ports) < 2 {
			continue
		}
		var as api.AutoscaleStatus
		err := ns.call(ctx, http.MethodGet, ts, "/v1/autoscale", 10*time.Second, &as)
		if err == nil && as.Nodes == nil {
			err = errors.New("no node recommendation yet")
		}
		if err == nil {
			return *as.Nodes, nil
		}
		errs = append(errs, fmt.Errorf("node %s: %w", ts.ID, err))
	}
	if len(errs) == 0 {
		return api.AutoscaleNodes{}, errors.New("mesos: no running node to ask for the node recommendation")
	}
	return api.AutoscaleNodes{}, fmt.Errorf("mesos: node recommendation: %w", errors.Join(errs...))
}

// drain drains the node of task ts, asking again while it answers that it
// is still draining, until ctx ends.
func (ns *nodeScaler) drain(ctx context.Context, ts mesosstatus.TaskStatus) error {
	for {
		var ds api.DrainStatus
		err := ns.call(ctx, http.MethodPost, ts, "/v1/node/drain?timeout="+drainTimeout.String(), drainTimeout+5*time.Second, &ds)
		var se *statusError
		if errors.As(err, &se) && se.code == http.StatusServiceUnavailable && ctx.Err() == nil {
			continue // still draining
		}
		if err == nil && !ds.Drained {
			err = errors.New("the node did not say it is drained")
		}
		return err
	}
}

// statusError is an answer other than 200 from a node.
type statusError struct {
	code int
	msg  string
}

func (e *statusError) Error() string { return strconv.Itoa(e.code) + ": " + e.msg }

// call makes one request to the control API of task ts's node and
// decodes its answer into out.
func (ns *nodeScaler) call(ctx context.Context, method string, ts mesosstatus.TaskStatus, path string, timeout time.Duration, out any) error {
	if len(ts.Ports) < 2 || ts.Host == "" {
		return errors.New("the task has no control API address")
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	url := ns.s.nodeScheme + "://" + net.JoinHostPort(ts.Host, strconv.FormatUint(ts.Ports[1], 10)) + path
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		return err
	}
	if tok := ns.s.cfg.NodeToken; tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := ns.s.nodeClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var e api.Error
		if json.Unmarshal(body, &e) != nil || e.Error == "" {
			e.Error = string(body)
		}
		return &statusError{code: resp.StatusCode, msg: e.Error}
	}
	return json.Unmarshal(body, out)
}
