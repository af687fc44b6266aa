package control

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/manifest"
	"github.com/sluicehq/sluice/topology"
	"github.com/sluicehq/sluice/wasmop"
)

func (s *Server) listOperators(w http.ResponseWriter, r *http.Request) {
	if !s.request(w, r, nil) {
		return
	}
	v, err := s.gather(r.Context())
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, err)
		return
	}
	writeJSON(w, http.StatusOK, v.operators())
}

func (s *Server) getOperator(w http.ResponseWriter, r *http.Request) {
	if !s.request(w, r, nil) {
		return
	}
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
	var req api.DeployRequest
	if !s.request(w, r, &req) {
		return
	}
	s.deployOne(w, r, req.Manifest)
}

// deployOne deploys one manifest and answers with a DeployResponse.
func (s *Server) deployOne(w http.ResponseWriter, r *http.Request, mf api.Manifest) {
	spec, fields := s.specFromManifest(mf)
	if len(fields) > 0 {
		writeJSON(w, http.StatusBadRequest, api.Error{Error: fmt.Sprintf("invalid manifest for %q", mf.Name), Fields: fields})
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

// deployMany deploys several manifests as one topology change.
func (s *Server) deployMany(w http.ResponseWriter, r *http.Request) {
	var req api.DeploymentRequest
	if !s.request(w, r, &req) {
		return
	}
	s.deployAll(w, r, req.Manifests)
}

// deployAll deploys manifests as one topology change and answers with a
// DeploymentResponse.
func (s *Server) deployAll(w http.ResponseWriter, r *http.Request, manifests []api.Manifest) {
	if len(manifests) == 0 {
		writeJSON(w, http.StatusBadRequest, api.Error{Error: "invalid deployment", Fields: []string{"manifests: must list at least one manifest"}})
		return
	}
	specs := make([]topology.OperatorSpec, len(manifests))
	names := make([]string, len(manifests))
	var fields []string
	for i, mf := range manifests {
		spec, problems := s.specFromManifest(mf)
		for _, p := range problems {
			fields = append(fields, fmt.Sprintf("manifests[%d] (%q): %s", i, mf.Name, p))
		}
		specs[i], names[i] = spec, mf.Name
	}
	if len(fields) > 0 {
		writeJSON(w, http.StatusBadRequest, api.Error{Error: "invalid deployment: nothing was deployed", Fields: fields})
		return
	}
	var created []bool
	t, err := changeOperators(r.Context(), s.node.Store(), names, func(t topology.Topology) (topology.Topology, error) {
		next, c, err := t.DeployAll(specs, time.Now())
		created = c
		return next, err
	})
	if err != nil {
		s.answerChange(w, r, t, "", false, err)
		return
	}
	s.log.Info("control: operators deployed", "operators", names, "version", t.Version, "by", who(r.Context()).name)
	resp := api.DeploymentResponse{Version: t.Version, Created: created}
	for _, name := range names {
		spec, _ := t.Find(name)
		ov := view{topo: t}.operator(spec)
		ov.State, ov.Pending = "deploying", ""
		resp.Operators = append(resp.Operators, ov)
	}
	code := http.StatusOK
	if slices.Contains(created, true) {
		code = http.StatusCreated
	}
	writeJSON(w, code, resp)
}

func (s *Server) scale(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	var req api.ScaleRequest
	if !s.request(w, r, &req) {
		return
	}
	if req.Instances < 1 {
		writeJSON(w, http.StatusBadRequest, api.Error{Error: "invalid scale", Fields: []string{fmt.Sprintf("instances: must be ≥ 1, got %d", req.Instances)}})
		return
	}
	t, err := s.change(r.Context(), name, func(t topology.Topology) (topology.Topology, error) {
		return t.Scale(name, req.Instances, time.Now())
	})
	s.answerChange(w, r, t, name, false, err)
}

func (s *Server) kill(w http.ResponseWriter, r *http.Request) {
	if !s.request(w, r, nil, "purge") {
		return
	}
	name := r.PathValue("name")
	var purge bool
	switch p := r.URL.Query().Get("purge"); p {
	case "", "0", "false":
	case "1", "true":
		purge = true
	default:
		writeError(w, http.StatusBadRequest, fmt.Errorf("purge: unknown value %q: want 1 or true to delete the state, 0 or false (the default) to keep it", p))
		return
	}
	t, err := s.change(r.Context(), name, func(t topology.Topology) (topology.Topology, error) {
		return t.Kill(name, purge)
	})
	if err != nil {
		s.answerChange(w, r, t, name, false, err)
		return
	}
	s.log.Info("control: operator killed", "operator", name, "purge", purge, "version", t.Version, "by", who(r.Context()).name)
	writeJSON(w, http.StatusOK, api.DeployResponse{Operator: api.OperatorView{Name: name, State: "killed"}, Version: t.Version})
}

// change applies a change to the topology with check-and-set. A concurrent
// change to another operator is retried on top; one to the same operator
// is a conflict the caller must resolve.
func (s *Server) change(ctx context.Context, name string, change func(topology.Topology) (topology.Topology, error)) (topology.Topology, error) {
	return changeOperator(ctx, s.node.Store(), name, change)
}

// changeOperator is Server.change on a given store.
func changeOperator(ctx context.Context, store topology.Store, name string, change func(topology.Topology) (topology.Topology, error)) (topology.Topology, error) {
	return changeOperators(ctx, store, []string{name}, change)
}

// changeOperators applies a change to the named operators with
// check-and-set: a concurrent change to any of them is a conflict, one to
// other operators is retried on top.
func changeOperators(ctx context.Context, store topology.Store, names []string, change func(topology.Topology) (topology.Topology, error)) (topology.Topology, error) {
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
		for _, name := range names {
			before, was := cur.Find(name)
			after, is := now.Find(name)
			if was != is || (is && !after.DeployedAt.Equal(before.DeployedAt)) {
				return topology.Topology{}, fmt.Errorf("%w: operator %q was changed by another client (topology version %d → %d); look at it and retry",
					topology.ErrConflict, name, cur.Version, now.Version)
			}
		}
	}
	return topology.Topology{}, fmt.Errorf("%w: the topology keeps changing; retry", topology.ErrConflict)
}

// answerChange writes the answer to a deploy or scale.
func (s *Server) answerChange(w http.ResponseWriter, r *http.Request, t topology.Topology, name string, created bool, err error) {
	var me *core.MetadataError
	switch {
	case errors.Is(err, topology.ErrConflict):
		writeJSON(w, http.StatusConflict, api.Error{Error: err.Error(), Conflict: true})
		return
	case errors.Is(err, topology.ErrUnknownOperator):
		writeError(w, http.StatusNotFound, fmt.Errorf("no operator %q is deployed", name))
		return
	case errors.As(err, &me):
		writeJSON(w, http.StatusBadRequest, api.Error{Error: fmt.Sprintf("invalid settings for %q", me.Operator), Fields: []string{manifestField(me)}})
		return
	case err != nil:
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	spec, _ := t.Find(name)
	s.log.Info("control: operator changed", "operator", name, "method", r.Method, "version", t.Version, "by", who(r.Context()).name)
	code := http.StatusOK
	if created {
		code = http.StatusCreated
	}
	// The node applies the new version asynchronously; answer with the
	// settings, placement comes with the next GET.
	ov := view{topo: t}.operator(spec)
	ov.State, ov.Pending = "deploying", ""
	writeJSON(w, code, api.DeployResponse{Operator: ov, Version: t.Version, Created: created})
}

// specFromManifest builds an operator spec from a manifest over the kind's
// own metadata (when this node hosts the kind) and checks it. It returns
// every problem as "field: problem".
func (s *Server) specFromManifest(mf api.Manifest) (topology.OperatorSpec, []string) {
	if err := manifest.Validate(mf); err != nil {
		var ve *manifest.ValidationError
		if errors.As(err, &ve) {
			return topology.OperatorSpec{}, ve.Lines()
		}
		return topology.OperatorSpec{}, []string{err.Error()}
	}
	if problems := s.checkManifest(mf); len(problems) > 0 {
		return topology.OperatorSpec{}, problems
	}
	kind := mf.Kind
	if kind == "" {
		kind = mf.Name
		if rt, _ := core.ParseRuntime(mf.Runtime); rt == core.RuntimeWasm { // validated
			kind = core.WasmKind
		}
	}
	if kind == core.WasmKind {
		// The module must be there and be an operator now, not when an
		// instance is placed (logged on some node).
		if err := wasmop.CheckModule(context.Background(), mf.Module); err != nil {
			return topology.OperatorSpec{}, []string{err.Error()}
		}
	}
	meta, known := s.node.KindMetadata(kind)
	if !known {
		// Deploying an operator of a kind no node hosts yet is allowed: it
		// stays pending until a node hosting the kind joins or a launcher
		// starts its executable.
		s.log.Info("deploying an operator of a kind this node does not host", "operator", mf.Name, "kind", kind)
	}
	if mf.Window != nil && known && meta.Window == nil {
		return topology.OperatorSpec{}, []string{fmt.Sprintf("window: kind %q is not a window operator (it declares no windows, see sdk/window): remove window", kind)}
	}
	if known {
		if problems := contradictions(mf, kind, meta); len(problems) > 0 {
			return topology.OperatorSpec{}, problems
		}
	}
	meta = manifest.Metadata(mf, meta)
	spec := topology.OperatorSpec{Kind: kind, Meta: meta, Executable: mf.Executable, CPUs: mf.CPUs, Mem: mf.Mem, Disk: mf.Disk,
		Retries: mf.Retries, Env: mf.Environment}
	// Checks that need the kind's own metadata (e.g. instances ≤ keyGroups).
	if err := meta.Validate(); err != nil {
		var me *core.MetadataError
		if errors.As(err, &me) {
			return spec, []string{manifestField(me)}
		}
		return spec, []string{err.Error()}
	}
	if err := s.node.CheckKind(mf.Name, kind); err != nil {
		return spec, []string{"kind: " + err.Error()}
	}
	return spec, nil
}

// checkManifest applies this node's own rules to a valid manifest: an
// executable needs an authenticated API (a launcher runs it; an API
// declared Insecure is authenticated by its proxy), and the configured
// check (the launcher's environment policy) must pass.
func (s *Server) checkManifest(mf api.Manifest) []string {
	var problems []string
	if mf.Executable != "" && !s.auth.enabled && !s.cfg.Security.Insecure {
		problems = append(problems, "executable: this node's control API has no authentication, so it accepts no operator with an executable "+
			"(a launcher would run it for whoever asked): configure tokens or client certificates (docs/security.md)")
	}
	if s.cfg.CheckManifest != nil {
		problems = append(problems, s.cfg.CheckManifest(mf)...)
	}
	return problems
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
