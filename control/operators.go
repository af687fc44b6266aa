package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/topology"
)

func (s *Server) listOperators(w http.ResponseWriter, r *http.Request) {
	v, err := s.gather(r.Context())
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, err)
		return
	}
	writeJSON(w, http.StatusOK, v.operators())
}

func (s *Server) getOperator(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	v, err := s.gather(r.Context())
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, err)
		return
	}
	spec, ok := v.topo.Find(name)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Errorf("no operator %q is deployed", name))
		return
	}
	writeJSON(w, http.StatusOK, v.operator(spec))
}

func (s *Server) deploy(w http.ResponseWriter, r *http.Request) {
	var req DeployRequest
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("bad request body: %w", err))
		return
	}
	spec, fields := s.specFromManifest(req.Manifest)
	if len(fields) > 0 {
		writeJSON(w, http.StatusBadRequest, Error{Error: fmt.Sprintf("invalid manifest for %q", req.Manifest.Name), Fields: fields})
		return
	}
	var created bool
	t, err := s.change(r.Context(), spec.Meta.Name, func(t topology.Topology) (topology.Topology, error) {
		next, c, err := t.Deploy(spec, time.Now())
		created = c
		return next, err
	})
	s.answerChange(w, r, t, spec.Meta.Name, created, err)
}

func (s *Server) scale(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	var req ScaleRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("bad request body: %w", err))
		return
	}
	if req.Instances < 1 {
		writeJSON(w, http.StatusBadRequest, Error{Error: "invalid scale", Fields: []string{fmt.Sprintf("instances: must be ≥ 1, got %d", req.Instances)}})
		return
	}
	t, err := s.change(r.Context(), name, func(t topology.Topology) (topology.Topology, error) {
		return t.Scale(name, req.Instances, time.Now())
	})
	s.answerChange(w, r, t, name, false, err)
}

func (s *Server) kill(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	purge := r.URL.Query().Get("purge") == "1" || r.URL.Query().Get("purge") == "true"
	t, err := s.change(r.Context(), name, func(t topology.Topology) (topology.Topology, error) {
		return t.Kill(name, purge)
	})
	if err != nil {
		s.answerChange(w, r, t, name, false, err)
		return
	}
	writeJSON(w, http.StatusOK, DeployResponse{Operator: OperatorView{Name: name, State: "killed"}, Version: t.Version})
}

// change applies a change to the topology with check-and-set. A concurrent
// change to another operator is retried on top; one to the same operator
// is a conflict the caller must resolve.
func (s *Server) change(ctx context.Context, name string, change func(topology.Topology) (topology.Topology, error)) (topology.Topology, error) {
	return changeOperator(ctx, s.node.Store(), name, change)
}

// changeOperator is Server.change on a given store.
func changeOperator(ctx context.Context, store topology.Store, name string, change func(topology.Topology) (topology.Topology, error)) (topology.Topology, error) {
	for attempt := 0; attempt < 20; attempt++ {
		cur, err := store.Load(ctx)
		if err != nil {
			return topology.Topology{}, err
		}
		next, err := change(cur)
		if err != nil {
			return topology.Topology{}, err
		}
		if next.Version == cur.Version {
			return cur, nil
		}
		err = store.Swap(ctx, next)
		if err == nil {
			return next, nil
		}
		if !errors.Is(err, topology.ErrConflict) {
			return topology.Topology{}, err
		}
		now, lerr := store.Load(ctx)
		if lerr != nil {
			return topology.Topology{}, lerr
		}
		before, was := cur.Find(name)
		after, is := now.Find(name)
		if was != is || (is && !after.DeployedAt.Equal(before.DeployedAt)) {
			return topology.Topology{}, fmt.Errorf("%w: operator %q was changed by another client (topology version %d → %d); look at it and retry",
				topology.ErrConflict, name, cur.Version, now.Version)
		}
	}
	return topology.Topology{}, fmt.Errorf("%w: the topology keeps changing; retry", topology.ErrConflict)
}

// answerChange writes the answer to a deploy or scale.
func (s *Server) answerChange(w http.ResponseWriter, r *http.Request, t topology.Topology, name string, created bool, err error) {
	var me *core.MetadataError
	switch {
	case errors.Is(err, topology.ErrConflict):
		writeJSON(w, http.StatusConflict, Error{Error: err.Error(), Conflict: true})
		return
	case errors.Is(err, topology.ErrUnknownOperator):
		writeError(w, http.StatusNotFound, fmt.Errorf("no operator %q is deployed", name))
		return
	case errors.As(err, &me):
		writeJSON(w, http.StatusBadRequest, Error{Error: fmt.Sprintf("invalid settings for %q", name), Fields: []string{manifestField(me)}})
		return
	case err != nil:
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	spec, _ := t.Find(name)
	code := http.StatusOK
	if created {
		code = http.StatusCreated
	}
	// The node applies the new version asynchronously; answer with the
	// settings, placement comes with the next GET.
	ov := view{topo: t}.operator(spec)
	ov.State, ov.Pending = "deploying", ""
	writeJSON(w, code, DeployResponse{Operator: ov, Version: t.Version, Created: created})
}

// specFromManifest builds an operator spec from a manifest over the kind's
// own metadata (when this node hosts the kind) and checks it. It returns
// every problem as "field: problem".
func (s *Server) specFromManifest(mf Manifest) (topology.OperatorSpec, []string) {
	var fields []string
	bad := func(field, format string, args ...any) {
		fields = append(fields, field+": "+fmt.Sprintf(format, args...))
	}
	if err := core.ValidName(mf.Name); err != nil {
		bad("name", "%v", err)
	}
	kind := mf.Kind
	if kind == "" {
		kind = mf.Name
	}
	meta, known := s.node.KindMetadata(kind)
	if !known && mf.Executable == "" && len(mf.Inputs) == 0 && len(mf.Outputs) == 0 {
		// Nothing to go on: neither the kind's code nor the manifest says
		// what the operator reads and writes. Deploying it anyway lets a
		// node hosting the kind join later, so only note it.
		s.log.Info("deploying an operator of a kind no node here hosts", "operator", mf.Name, "kind", kind)
	}
	meta.Name = mf.Name
	if mf.Instances < 0 {
		bad("instances", "must be ≥ 1, got %d", mf.Instances)
	} else if mf.Instances > 0 {
		meta.Parallelism = mf.Instances
	}
	if mf.KeyGroups != 0 {
		meta.KeyGroups = mf.KeyGroups
	}
	if mf.Inputs != nil {
		meta.Inputs = nil
		for i, in := range mf.Inputs {
			rt, err := core.ParseRouting(in.Routing)
			if err != nil {
				bad(fmt.Sprintf("inputs[%d].routing", i), "%v", err)
			}
			meta.Inputs = append(meta.Inputs, core.Input{Stream: in.Stream, Routing: rt})
		}
	}
	if mf.Outputs != nil {
		meta.Outputs = mf.Outputs
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"cpus", mf.CPUs}, {"mem", mf.Mem}, {"disk", mf.Disk}} {
		if f.v < 0 {
			bad(f.name, "must be ≥ 0, got %v", f.v)
		}
	}
	if mf.Retries < 0 {
		bad("retries", "must be ≥ 0, got %d", mf.Retries)
	}
	if rp := mf.Restart; rp != nil {
		meta.Restart.MaxRestarts = rp.MaxRestarts
		meta.Restart.DeadLetterAfter = rp.DeadLetterAfter
		for _, d := range []struct {
			field string
			s     string
			into  *time.Duration
		}{{"restart.window", rp.Window, &meta.Restart.Window}, {"restart.initialBackoff", rp.InitialBackoff, &meta.Restart.InitialBackoff}, {"restart.maxBackoff", rp.MaxBackoff, &meta.Restart.MaxBackoff}} {
			if d.s == "" {
				continue
			}
			v, err := time.ParseDuration(d.s)
			if err != nil {
				bad(d.field, "bad duration %q: %v", d.s, err)
				continue
			}
			*d.into = v
		}
	}
	meta = meta.WithDefaults()
	if len(fields) == 0 {
		if err := meta.Validate(); err != nil {
			var me *core.MetadataError
			if errors.As(err, &me) {
				fields = append(fields, manifestField(me))
			} else {
				fields = append(fields, err.Error())
			}
		}
	}
	return topology.OperatorSpec{Kind: kind, Meta: meta, Executable: mf.Executable, CPUs: mf.CPUs, Mem: mf.Mem, Disk: mf.Disk,
		Retries: mf.Retries, Env: mf.Environment}, fields
}

// manifestField renders a metadata error with the manifest's field names
// (the manifest says instances where the metadata says parallelism).
func manifestField(me *core.MetadataError) string {
	field := me.Field
	if field == "parallelism" {
		field = "instances"
	}
	return field + ": " + me.Problem
}
