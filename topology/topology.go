package topology

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/sluicehq/sluice/internal/core"
)

// OperatorSpec is one deployed operator: which implementation runs it, its
// metadata (with defaults applied) and its layout epoch, which grows by one
// on every rescale so that instances of different layouts never share an
// identity.
type OperatorSpec struct {
	// Kind names the implementation; a node can host the operator if it has
	// a factory for the kind.
	Kind string
	// Meta is the operator's metadata; Meta.Parallelism is the current
	// number of instances.
	Meta core.Metadata
	// Epoch identifies the current layout (parallelism) of the operator.
	Epoch int64
	// Revision grows by one with every change of the operator's settings
	// (Deploy of a spec that differs in anything but DeployedAt and
	// FromCode: its streams, restart policy, parallelism, executable,
	// resources, environment) and starts at 0 when the operator is
	// (re)created. Instances of the current Epoch keep running across a
	// change of Revision and must adopt the new settings in place: an
	// instance started with (Epoch, Revision) = (e, r) runs stale settings
	// while the topology says (e, r' > r).
	Revision int64 `json:",omitempty"`
	// Executable is a node binary hosting Kind, for launchers; optional.
	Executable string `json:",omitempty"`
	// Resources for launchers.
	CPUs, Mem, Disk float64 `json:",omitempty"`
	// Retries bounds launcher restarts of the operator's process.
	Retries int `json:",omitempty"`
	// Env is the environment of the operator's process when launched.
	Env map[string]string `json:",omitempty"`
	// FromCode marks operators deployed from a program's own operator list
	// (node.Run) rather than through the control API: a changed program
	// updates them on its next start.
	FromCode bool `json:",omitempty"`
	// DeployedAt is when the operator was deployed or last changed.
	DeployedAt time.Time
}

// Topology is the set of deployed operators.
type Topology struct {
	// Version grows with every change; 0 means never written.
	Version int64
	// Operators in deployment order.
	Operators []OperatorSpec
	// Retired holds the last epoch of killed operators, so that a
	// redeployed operator never reuses an instance identity.
	Retired map[string]int64 `json:",omitempty"`
	// Purged lists killed operators whose state every node must delete.
	Purged []string `json:",omitempty"`
	// Seeded lists the operator names ever deployed from a program's
	// operator list, so that a killed one is not deployed again when the
	// program restarts.
	Seeded []string `json:",omitempty"`
	// Seal is the signature of the node that stored this version, in a
	// cluster with node certificates (see Sealer); nil otherwise.
	Seal *Seal `json:",omitempty"`
}

// Find returns the spec of the named operator.
func (t Topology) Find(name string) (OperatorSpec, bool) {
	for _, op := range t.Operators {
		if op.Meta.Name == name {
			return op, true
		}
	}
	return OperatorSpec{}, false
}

// Clone returns a deep enough copy of t to modify, without t's Seal.
func (t Topology) Clone() Topology {
	c := t
	c.Seal = nil // a copy to modify is no longer what was signed
	c.Operators = slices.Clone(t.Operators)
	c.Purged = slices.Clone(t.Purged)
	c.Seeded = slices.Clone(t.Seeded)
	c.Retired = make(map[string]int64, len(t.Retired))
	for k, v := range t.Retired {
		c.Retired[k] = v
	}
	return c
}

// Validate checks every operator's metadata, that names are unique and
// that the stream graph has no cycle (a *CycleError for the first).
func (t Topology) Validate() error {
	seen := make(map[string]int)
	for i, op := range t.Operators {
		if err := op.Meta.Validate(); err != nil {
			return err
		}
		if j, dup := seen[op.Meta.Name]; dup {
			return &core.MetadataError{Operator: op.Meta.Name, Field: "name",
				Problem: fmt.Sprintf("duplicate: operators #%d and #%d are both named %q", j, i, op.Meta.Name)}
		}
		seen[op.Meta.Name] = i
		if op.Kind == "" {
			return &core.MetadataError{Operator: op.Meta.Name, Field: "kind", Problem: "must not be empty"}
		}
	}
	if cs := t.Cycles(); len(cs) > 0 {
		return t.checkCycles([]string{cs[0].Path[0]})
	}
	return nil
}

// Deploy adds spec, or replaces the operator of the same name (a change of
// settings). Changing the parallelism starts a new epoch; the key groups
// and the windows (Metadata.Window, once set) of a deployed operator never
// change. created reports a new operator. An operator that would be on a
// cycle of the stream graph is refused with a *CycleError.
func (t Topology) Deploy(spec OperatorSpec, now time.Time) (next Topology, created bool, err error) {
	if next, created, err = t.deploy(spec, now); err != nil {
		return t, false, err
	}
	if err := next.checkCycles([]string{spec.Meta.Name}); err != nil {
		return t, false, err
	}
	return next, created, nil
}

// deploy is Deploy without the check for cycles, which a change of several
// operators makes once at the end.
func (t Topology) deploy(spec OperatorSpec, now time.Time) (next Topology, created bool, err error) {
	spec.Meta = spec.Meta.WithDefaults()
	if err := spec.Meta.Validate(); err != nil {
		return t, false, err
	}
	next = t.Clone()
	next.Version++
	spec.DeployedAt = now
	for i, old := range next.Operators {
		if old.Meta.Name != spec.Meta.Name {
			continue
		}
		if spec.Meta.KeyGroups != old.Meta.KeyGroups {
			return t, false, &core.MetadataError{Operator: spec.Meta.Name, Field: "keyGroups",
				Problem: fmt.Sprintf("is fixed when the operator is first deployed: %d, got %d", old.Meta.KeyGroups, spec.Meta.KeyGroups)}
		}
		if ow := old.Meta.Window; ow != nil && !ow.Equal(spec.Meta.Window) {
			// Its state is laid out by its windows, and its instances
			// adopt a change of settings in place.
			return t, false, &core.MetadataError{Operator: spec.Meta.Name, Field: "window",
				Problem: fmt.Sprintf("is fixed when the operator is first deployed (its window state is laid out by it): %v, got %s; "+
					"kill the operator with purge and deploy it again, or deploy it under another name", *ow, windowString(spec.Meta.Window))}
		}
		spec.Epoch = old.Epoch
		if spec.Meta.Parallelism != old.Meta.Parallelism || spec.Kind != old.Kind {
			spec.Epoch++
		}
		spec.Revision = old.Revision
		if !sameSettings(old, spec) {
			spec.Revision++
		}
		next.Operators[i] = spec
		return next, false, nil
	}
	spec.Revision = 0
	if last, ok := next.Retired[spec.Meta.Name]; ok {
		spec.Epoch = last + 1
		delete(next.Retired, spec.Meta.Name)
	}
	next.Purged = slices.DeleteFunc(next.Purged, func(s string) bool { return s == spec.Meta.Name })
	next.Operators = append(next.Operators, spec)
	return next, true, nil
}

// DeployAll deploys several operators as one change (one version), as
// Deploy does each: a pipeline deployed this way starts whole, with every
// reader in place before any writer runs. created reports, in order,
// whether each was new. Two specs with the same name are an error, and so
// is a result where one of them is on a cycle (a *CycleError): only the
// end result counts, so a pipeline can be rewired in one change.
func (t Topology) DeployAll(specs []OperatorSpec, now time.Time) (next Topology, created []bool, err error) {
	next = t
	seen := make(map[string]int, len(specs))
	for i, spec := range specs {
		if j, dup := seen[spec.Meta.Name]; dup {
			return t, nil, &core.MetadataError{Operator: spec.Meta.Name, Field: "name",
				Problem: fmt.Sprintf("deployed twice in one change (operators #%d and #%d)", j, i)}
		}
		seen[spec.Meta.Name] = i
		var c bool
		if next, c, err = next.deploy(spec, now); err != nil {
			return t, nil, err
		}
		created = append(created, c)
	}
	names := make([]string, len(specs))
	for i, spec := range specs {
		names[i] = spec.Meta.Name
	}
	if err := next.checkCycles(names); err != nil {
		return t, nil, err
	}
	if len(specs) > 0 {
		next.Version = t.Version + 1 // one change, however many operators
	}
	return next, created, nil
}

// Scale sets the parallelism of the named operator, starting a new epoch.
func (t Topology) Scale(name string, instances int, now time.Time) (Topology, error) {
	spec, ok := t.Find(name)
	if !ok {
		return t, fmt.Errorf("%w: %q", ErrUnknownOperator, name)
	}
	if spec.Meta.Parallelism == instances {
		return t, nil
	}
	spec.Meta.Parallelism = instances
	spec.FromCode = false
	next, _, err := t.Deploy(spec, now)
	return next, err
}

// Kill removes the named operator. Its state stays on the nodes (and comes
// back if it is redeployed) unless purge is set.
func (t Topology) Kill(name string, purge bool) (Topology, error) {
	spec, ok := t.Find(name)
	if !ok {
		return t, fmt.Errorf("%w: %q", ErrUnknownOperator, name)
	}
	next := t.Clone()
	next.Version++
	next.Operators = slices.DeleteFunc(next.Operators, func(s OperatorSpec) bool { return s.Meta.Name == name })
	next.Retired[name] = spec.Epoch
	if purge && !slices.Contains(next.Purged, name) {
		next.Purged = append(next.Purged, name)
	}
	return next, nil
}

// Seed deploys the operators of a program's own list (specs, with FromCode
// set) that were never seeded before, and updates those still deployed from
// code whose metadata changed. It reports whether anything changed. As in
// DeployAll, an operator it deploys must not end up on a cycle.
func (t Topology) Seed(specs []OperatorSpec, now time.Time) (Topology, bool, error) {
	next, changed := t, false
	var deployed []string
	for _, spec := range specs {
		spec.FromCode = true
		old, isDeployed := next.Find(spec.Meta.Name)
		switch {
		case !slices.Contains(next.Seeded, spec.Meta.Name) && !isDeployed:
			n, _, err := next.deploy(spec, now)
			if err != nil {
				return t, false, err
			}
			next, changed = n, true
			deployed = append(deployed, spec.Meta.Name)
		case isDeployed && old.FromCode && !sameCode(old, spec):
			spec.Meta.KeyGroups = old.Meta.KeyGroups // fixed at first deploy
			n, _, err := next.deploy(spec, now)
			if err != nil {
				return t, false, err
			}
			next, changed = n, true
			deployed = append(deployed, spec.Meta.Name)
		}
		if !slices.Contains(next.Seeded, spec.Meta.Name) {
			if !changed {
				next = next.Clone()
				next.Version++
				changed = true
			}
			next.Seeded = append(next.Seeded, spec.Meta.Name)
		}
	}
	if err := next.checkCycles(deployed); err != nil {
		return t, false, err
	}
	if changed {
		next.Version = t.Version + 1 // one change, however many operators
	}
	return next, changed, nil
}

// sameSettings reports whether two specs of one operator (with defaults
// applied) run the same way: equal in all but DeployedAt, FromCode, Epoch
// and Revision.
func sameSettings(a, b OperatorSpec) bool {
	am, bm := a.Meta, b.Meta
	return a.Kind == b.Kind && am.Name == bm.Name && am.Parallelism == bm.Parallelism && am.KeyGroups == bm.KeyGroups &&
		slices.Equal(am.Inputs, bm.Inputs) && slices.Equal(am.Outputs, bm.Outputs) && am.Restart == bm.Restart &&
		am.Watermarks.Equal(bm.Watermarks) && am.Window.Equal(bm.Window) && am.Autoscale.Equal(bm.Autoscale) && a.Executable == b.Executable && a.CPUs == b.CPUs && a.Mem == b.Mem && a.Disk == b.Disk && a.Retries == b.Retries &&
		maps.Equal(a.Env, b.Env)
}

// sameCode reports whether a deployed spec matches a program's spec.
func sameCode(a, b OperatorSpec) bool {
	am, bm := a.Meta.WithDefaults(), b.Meta.WithDefaults()
	return a.Kind == b.Kind && am.Parallelism == bm.Parallelism &&
		slices.Equal(am.Inputs, bm.Inputs) && slices.Equal(am.Outputs, bm.Outputs) && am.Restart == bm.Restart &&
		am.Watermarks.Equal(bm.Watermarks) && am.Window.Equal(bm.Window) && am.Autoscale.Equal(bm.Autoscale)
}

// windowString describes a spec's windows, or says there are none.
func windowString(w *core.WindowSpec) string {
	if w == nil {
		return "none"
	}
	return w.String()
}
