package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/sluicehq/sluice/console"
	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/manifest"
)

// ConsoleInterval is how often GET /v1/console/events sends a snapshot.
const ConsoleInterval = time.Second

// minRateInterval is the shortest interval rates are measured over: a
// snapshot taken sooner after the previous one (by another browser, say)
// repeats the previous rates.
const minRateInterval = 500 * time.Millisecond

// consoleHub is the console's state on a server: the previous samples the
// rates are measured against, and the signal that ends the event streams
// when the server shuts down (an open stream would otherwise hold
// Shutdown until its deadline).
type consoleHub struct {
	once sync.Once
	stop chan struct{}

	mu       sync.Mutex
	last     time.Time // previous sample
	interval float64   // seconds between the last two samples

	latencies func() map[string]map[int]api.Latency // nil: no telemetry
	samples   map[string]rateSample
}

// rateSample is one counter set at one moment, with the rates measured
// when it was taken.
type rateSample struct {
	at     time.Time
	counts [3]float64 // counters: processed, produced, blocked ns (or CPU seconds)
	rates  [3]float64
}

func (h *consoleHub) init() {
	h.once.Do(func() {
		h.stop = make(chan struct{})
		h.samples = map[string]rateSample{}
	})
}

// stopped is closed when the server shuts down.
func (h *consoleHub) stopped() <-chan struct{} {
	h.init()
	return h.stop
}

// shutdown ends the event streams; http.Server calls it as Shutdown begins.
func (h *consoleHub) shutdown() {
	h.init()
	close(h.stop)
}

// rates returns the per-second rates of counts against the previous
// sample of key (zeros for a new key); counters that went down (an
// instance restarted from older state) rate 0.
func (h *consoleHub) rates(key string, now time.Time, counts [3]float64) [3]float64 {
	prev, ok := h.samples[key]
	switch {
	case !ok:
		h.samples[key] = rateSample{at: now, counts: counts}
		return [3]float64{}
	case now.Sub(prev.at) < minRateInterval:
		return prev.rates
	}
	dt := now.Sub(prev.at).Seconds()
	var r [3]float64
	for i := range counts {
		r[i] = max(0, counts[i]-prev.counts[i]) / dt
	}
	h.samples[key] = rateSample{at: now, counts: counts, rates: r}
	return r
}

// serveConsole registers the console's endpoints and its pages (/ui/,
// served without authentication: they hold no data, and every data call
// they make passes the authenticator).
func (s *Server) serveConsole() {
	s.mux.HandleFunc("GET /v1/console", need(api.RoleRead, s.consoleSnapshotHandler))
	s.mux.HandleFunc("GET /v1/console/events", need(api.RoleRead, s.consoleEvents))
	s.mux.HandleFunc("POST /v1/console/deploy", need(api.RoleAdmin, s.consoleDeploy))
	s.mux.Handle("GET "+console.Path, console.Handler())
	s.mux.Handle("GET /ui", http.RedirectHandler(console.Path, http.StatusMovedPermanently))
}

func (s *Server) consoleSnapshotHandler(w http.ResponseWriter, r *http.Request) {
	if !s.request(w, r, nil) {
		return
	}
	snap, err := s.consoleSnapshot(r.Context())
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, err)
		return
	}
	writeJSON(w, http.StatusOK, snap)
}

// consoleEvents streams a snapshot every ConsoleInterval as server-sent
// events ("event: snapshot", or "event: problem" with an api.Error when
// the cluster's state could not be read) until the client goes or the
// server shuts down.
func (s *Server) consoleEvents(w http.ResponseWriter, r *http.Request) {
	if !s.request(w, r, nil) {
		return
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	tick := time.NewTicker(ConsoleInterval)
	defer tick.Stop()
	stop := s.console.stopped()
	for {
		event, v := "snapshot", any(nil)
		snap, err := s.consoleSnapshot(r.Context())
		if err != nil {
			event, v = "problem", api.Error{Error: err.Error()}
		} else {
			v = snap
		}
		data, err := json.Marshal(v)
		if err != nil {
			return
		}
		// Each event gets the write timeout of an ordinary answer.
		_ = rc.SetWriteDeadline(time.Now().Add(s.cfg.Limits.WriteTimeout))
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, data); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-stop:
			return
		case <-tick.C:
		}
	}
}

// consoleDeploy parses manifest text (YAML or JSON) and deploys it as
// POST /v1/deployments does; parse errors answer 400 with each problem,
// its line and field, in Error.Fields.
func (s *Server) consoleDeploy(w http.ResponseWriter, r *http.Request) {
	var req api.ConsoleDeployRequest
	if !s.request(w, r, &req) {
		return
	}
	manifests, err := manifest.Parse([]byte(req.Text))
	var pe *manifest.ParseError
	switch {
	case errors.As(err, &pe):
		writeJSON(w, http.StatusBadRequest, api.Error{Error: "invalid manifest text: nothing was deployed", Fields: pe.Lines()})
		return
	case err != nil:
		writeError(w, http.StatusBadRequest, err)
		return
	}
	s.deployAll(w, r, manifests)
}

// consoleSnapshot gathers the cluster and measures its rates.
func (s *Server) consoleSnapshot(ctx context.Context) (api.ConsoleSnapshot, error) {
	v, err := s.gather(ctx)
	if err != nil {
		return api.ConsoleSnapshot{}, err
	}
	cs := v.status(s.node.ID())
	if s.external != nil {
		launched, pending := s.external(ctx)
		cs.Launcher = append(cs.Launcher, launched...)
		cs.Pending = append(cs.Pending, pending...)
	}
	h := &s.console
	h.init()
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	snap := api.ConsoleSnapshot{Time: now, Node: cs.Node, TopologyVersion: cs.TopologyVersion, Pending: cs.Pending,
		Launcher: cs.Launcher, Checkpoints: cs.Checkpoints, Events: timeline(v)}
	switch {
	case h.last.IsZero():
		h.last = now
	case now.Sub(h.last) >= minRateInterval:
		h.interval, h.last = now.Sub(h.last).Seconds(), now
	}
	snap.Interval = h.interval
	seen := map[string]bool{}
	rate := func(key string, counts [3]float64) [3]float64 {
		seen[key] = true
		return h.rates(key, now, counts)
	}
	for _, nv := range cs.Nodes {
		cn := api.ConsoleNode{NodeView: nv}
		if st, ok := v.nodes[nv.ID]; ok {
			cn.Queued, cn.Buffered, cn.Pending, cn.Process = st.Queued, st.Buffered, st.Pending, st.Process
			if st.Process != nil {
				cn.CPU = rate("cpu/"+nv.ID, [3]float64{st.Process.CPUSeconds})[0]
			}
		}
		snap.Nodes = append(snap.Nodes, cn)
	}
	outRate := map[string]float64{}
	for _, ov := range cs.Operators {
		co := consoleOperator(v, ov, rate)
		outRate[co.Name] = co.OutRate
		snap.Operators = append(snap.Operators, co)
	}
	var counts []api.StreamCount
	for _, st := range v.nodes {
		counts = append(counts, st.Streams...)
	}
	for _, sv := range Streams(v.topo, counts) {
		c := api.ConsoleStream{StreamView: sv}
		for _, p := range sv.Producers {
			c.Rate += outRate[p]
		}
		snap.Streams = append(snap.Streams, c)
	}
	for key, sm := range h.samples {
		if !seen[key] && now.Sub(sm.at) > time.Minute {
			delete(h.samples, key)
		}
	}
	return snap, nil
}

// SetLatencies makes the instances' latency quantiles part of the status
// (and so of the console): f returns those of the instances the node's
// telemetry timed, by operator and index. Call it before Serve.
func (s *Server) SetLatencies(f func() map[string]map[int]api.Latency) { s.console.latencies = f }

// addLatencies sets the latency of every instance f knows in ops.
func addLatencies(ops []api.NodeOperator, f func() map[string]map[int]api.Latency) {
	if f == nil {
		return
	}
	lat := f()
	for i := range ops {
		for j := range ops[i].Instances {
			in := &ops[i].Instances[j]
			if l, ok := lat[ops[i].Name][in.Index]; ok && in.State != "released" && in.State != "stopped" {
				in.Latency = &l
			}
		}
	}
}

// consoleOperator adds to an operator's view its instances' rates,
// mailbox depth and backpressure, from the nodes that run them.
func consoleOperator(v view, ov api.OperatorView, rate func(string, [3]float64) [3]float64) api.ConsoleOperator {
	co := api.ConsoleOperator{OperatorView: ov, Detail: []api.ConsoleInstance{}}
	co.Placement = nil // Detail has every instance, with its rates
	for _, iv := range ov.Placement {
		ci := api.ConsoleInstance{InstanceView: iv}
		co.Restarts += iv.Restarts
		co.DeadLetters += iv.DeadLetters
		if in, ok := v.instance(iv.Node, ov.Name, ov.Epoch, iv.Index); ok {
			r := rate(fmt.Sprintf("in/%s/%s/%d/%d", iv.Node, ov.Name, ov.Epoch, iv.Index),
				[3]float64{float64(in.Processed), float64(in.Produced), float64(in.BlockedNanos)})
			ci.InRate, ci.OutRate, ci.Blocked = r[0], r[1], min(1, r[2]/float64(time.Second))
			ci.Queued, ci.StateBytes, ci.TransientErrors, ci.FailedReason, ci.Latency = in.Queued, in.StateBytes, in.TransientErrors, in.FailedReason, in.Latency
			ci.Watermark, ci.Finished = in.Watermark, in.Finished
		}
		co.InRate += ci.InRate
		co.OutRate += ci.OutRate
		co.Queued += ci.Queued
		co.Blocked = max(co.Blocked, ci.Blocked)
		co.Detail = append(co.Detail, ci)
	}
	co.RecentDeadLetters = recentDeadLetters(v, ov.Name)
	return co
}

// consoleDeadLetters is how many of an operator's dead letters the
// console shows, the newest of those its nodes keep.
const consoleDeadLetters = 10

// recentDeadLetters gathers op's latest dead letters from the nodes that
// answered, newest first.
func recentDeadLetters(v view, op string) []api.DeadLetter {
	out := []api.DeadLetter{}
	for _, st := range v.nodes {
		for _, o := range st.Operators {
			if o.Name == op {
				out = append(out, o.RecentDeadLetters...)
			}
		}
	}
	slices.SortFunc(out, func(a, b api.DeadLetter) int { return b.Time.Compare(a.Time) })
	return out[:min(len(out), consoleDeadLetters)]
}

// instance finds instance index of operator op (of epoch) on node id, as
// that node reported it.
func (v view) instance(id, op string, epoch int64, index int) (api.NodeInstance, bool) {
	st, ok := v.nodes[id]
	if !ok {
		return api.NodeInstance{}, false
	}
	for _, o := range st.Operators {
		if o.Name != op {
			continue
		}
		for _, in := range o.Instances {
			if in.Epoch == epoch && in.Index == index && in.State != "released" && in.State != "stopped" {
				return in, true
			}
		}
	}
	return api.NodeInstance{}, false
}
