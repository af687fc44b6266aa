package control

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/sluicehq/sluice/cluster"
	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/topology"
)

// launcherKind is the pseudo operator kind announced by nodes that run a
// launcher (see package launcher).
const launcherKind = "sluice.launcher"

// view is the cluster as gathered by one request: the topology, the
// members and each member's own status.
type view struct {
	topo    topology.Topology
	members []cluster.Member
	nodes   map[string]api.NodeStatus // by member id; missing when it did not answer
	errs    map[string]string
}

// gather collects this node's view of the cluster, asking every member for
// its status in parallel.
func (s *Server) gather(ctx context.Context) (view, error) {
	self, err := s.local(ctx)
	if err != nil {
		return view{}, err
	}
	topo, err := s.node.Store().Load(ctx)
	if err != nil {
		return view{}, err
	}
	v := view{topo: topo, members: self.Members, nodes: map[string]api.NodeStatus{self.Node: self}, errs: map[string]string{}}
	if len(v.members) == 0 {
		v.members = []cluster.Member{{ID: self.Node, Address: self.Address, HTTPAddr: s.addr, Kinds: self.Kinds}}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, m := range v.members {
		if m.ID == self.Node {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := s.fetch(ctx, m)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				v.errs[m.ID] = err.Error()
				return
			}
			v.nodes[m.ID] = st
		}()
	}
	wg.Wait()
	return v, nil
}

// fetch asks member m for its own status, with this node's credentials:
// over HTTPS verified against the CA bundle when TLS is on, with its
// token when it has one.
func (s *Server) fetch(ctx context.Context, m cluster.Member) (api.NodeStatus, error) {
	if m.HTTPAddr == "" {
		return api.NodeStatus{}, fmt.Errorf("node %s announces no control address", m.ID)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.scheme+"://"+m.HTTPAddr+"/v1/node", nil)
	if err != nil {
		return api.NodeStatus{}, err
	}
	if t := s.peerToken(); t != "" {
		req.Header.Set("Authorization", "Bearer "+t)
	}
	resp, err := s.peer.Do(req)
	if err != nil {
		return api.NodeStatus{}, fmt.Errorf("node %s: %w", m.ID, err)
	}
	defer resp.Body.Close()
	body := io.LimitReader(resp.Body, maxPeerAnswer)
	if resp.StatusCode != http.StatusOK {
		var e api.Error
		if json.NewDecoder(body).Decode(&e) == nil && e.Error != "" {
			return api.NodeStatus{}, fmt.Errorf("node %s: %s: %s", m.ID, resp.Status, e.Error)
		}
		return api.NodeStatus{}, fmt.Errorf("node %s: %s", m.ID, resp.Status)
	}
	var st api.NodeStatus
	if err := json.NewDecoder(body).Decode(&st); err != nil {
		return api.NodeStatus{}, fmt.Errorf("node %s: %w", m.ID, err)
	}
	return st, nil
}

// maxPeerAnswer bounds what a node reads of another node's status.
const maxPeerAnswer = 64 << 20

// operators builds the view of every deployed operator.
func (v view) operators() []api.OperatorView {
	out := make([]api.OperatorView, 0, len(v.topo.Operators))
	for _, spec := range v.topo.Operators {
		out = append(out, v.operator(spec))
	}
	return out
}

// operator builds the view of one deployed operator.
func (v view) operator(spec topology.OperatorSpec) api.OperatorView {
	m := spec.Meta
	ov := api.OperatorView{
		Name: m.Name, Kind: spec.Kind, Runtime: string(m.Runtime), Module: m.Module, Executable: spec.Executable, Instances: m.Parallelism, KeyGroups: m.KeyGroups,
		Epoch: spec.Epoch, Inputs: m.Inputs, Outputs: m.Outputs, CPUs: spec.CPUs, Mem: spec.Mem, Disk: spec.Disk,
		Retries: spec.Retries, DeployedAt: spec.DeployedAt, Window: m.Window, Autoscale: m.Autoscale,
	}
	placed := map[int]api.InstanceView{}
	for id, st := range v.nodes {
		for _, o := range st.Operators {
			if o.Name != m.Name {
				continue
			}
			for _, in := range o.Instances {
				if in.Epoch != spec.Epoch {
					continue
				}
				if in.State == "released" || in.State == "stopped" {
					continue
				}
				placed[in.Index] = api.InstanceView{Index: in.Index, Node: id, State: in.State, FirstGroup: in.FirstGroup, EndGroup: in.EndGroup,
					Processed: in.Processed, Produced: in.Produced, Restarts: in.Restarts, DeadLetters: in.DeadLetters, LastError: in.LastError}
			}
		}
	}
	running, failed := 0, 0
	for i := 0; i < m.Parallelism; i++ {
		iv, ok := placed[i]
		if !ok {
			iv = api.InstanceView{Index: i, State: "unplaced"}
		}
		switch iv.State {
		case "running":
			running++
		case "failed":
			failed++
		}
		ov.Placement = append(ov.Placement, iv)
	}
	switch {
	case running == m.Parallelism:
		ov.State = "running"
	case failed > 0:
		ov.State = "degraded"
	default:
		ov.State = "starting"
		if reason := v.pendingReason(spec); reason != "" {
			ov.State, ov.Pending = "pending", reason
		} else if len(v.errs) > 0 {
			ov.State = "unknown"
			ov.Pending = "some nodes did not answer"
		}
	}
	return ov
}

// pendingReason says why no node can run spec, or "" if one can.
func (v view) pendingReason(spec topology.OperatorSpec) string {
	var launchers []string
	for _, m := range v.members {
		if slices.Contains(m.Kinds, spec.Kind) {
			return ""
		}
		if slices.Contains(m.Kinds, launcherKind) {
			launchers = append(launchers, m.ID)
		}
	}
	reason := fmt.Sprintf("no node hosts kind %q", spec.Kind)
	switch {
	case spec.Executable == "":
		return reason + " and the manifest names no executable to launch"
	case len(launchers) == 0:
		return reason + " and no node runs a launcher to start " + spec.Executable
	}
	for _, st := range v.nodes {
		for _, l := range st.Launched {
			if l.Operator == spec.Meta.Name {
				return fmt.Sprintf("%s; launcher on %s: %s %s", reason, l.Where, l.State, l.Message)
			}
		}
	}
	return fmt.Sprintf("%s; waiting for a launcher (%s) to start %s", reason, strings.Join(launchers, ", "), spec.Executable)
}

// nodeViews describes every member.
func (v view) nodeViews() []api.NodeView {
	var out []api.NodeView
	for _, m := range v.members {
		nv := api.NodeView{Member: m}
		if st, ok := v.nodes[m.ID]; ok {
			nv.Healthy = true
			if h := st.Health; h != nil && !h.Healthy {
				nv.Healthy, nv.Error = false, "unhealthy: "+h.Reason
			}
			for _, o := range st.Operators {
				for _, in := range o.Instances {
					if in.State == "running" {
						nv.Instances++
					}
				}
			}
		} else {
			nv.Error = v.errs[m.ID]
		}
		out = append(out, nv)
	}
	return out
}

// status builds the cluster status.
func (v view) status(self string) api.ClusterStatus {
	cs := api.ClusterStatus{Node: self, TopologyVersion: v.topo.Version, Nodes: v.nodeViews(), Operators: v.operators(), Pending: []string{}}
	for _, ov := range cs.Operators {
		if ov.Pending != "" {
			cs.Pending = append(cs.Pending, fmt.Sprintf("%s: %s", ov.Name, ov.Pending))
		}
	}
	ids := make([]string, 0, len(v.nodes))
	for id := range v.nodes {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if h := v.nodes[id].Health; h != nil && !h.Healthy {
			cs.Pending = append(cs.Pending, fmt.Sprintf("node %s is unhealthy, taking no work: %s", id, h.Reason))
		}
		for _, p := range v.nodes[id].Pending {
			cs.Pending = append(cs.Pending, fmt.Sprintf("%s on %s", p, id))
		}
		cs.Launcher = append(cs.Launcher, v.nodes[id].Launched...)
	}
	for id, e := range v.errs {
		cs.Pending = append(cs.Pending, fmt.Sprintf("node %s did not answer: %s", id, e))
	}
	cs.Checkpoints = v.checkpoints()
	return cs
}

func (s *Server) clusterStatus(w http.ResponseWriter, r *http.Request) {
	if !s.request(w, r, nil) {
		return
	}
	v, err := s.gather(r.Context())
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, err)
		return
	}
	cs := v.status(s.node.ID())
	if s.external != nil {
		launched, pending := s.external(r.Context())
		cs.Launcher = append(cs.Launcher, launched...)
		cs.Pending = append(cs.Pending, pending...)
	}
	writeJSON(w, http.StatusOK, cs)
}

func (s *Server) nodes(w http.ResponseWriter, r *http.Request) {
	if !s.request(w, r, nil) {
		return
	}
	v, err := s.gather(r.Context())
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, err)
		return
	}
	writeJSON(w, http.StatusOK, v.nodeViews())
}
