package manifest

import (
	"cmp"
	"slices"
	"time"

	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/internal/core"
)

// Metadata returns the operator metadata that m deploys: base (the kind's
// own metadata when a node hosts the kind, else the zero Metadata) with the
// fields m sets, and the defaults for what neither sets. m must have
// passed Validate: an unparsable duration is left unset. Inputs and
// outputs given in m replace the kind's; a zero field of m (an instance
// count, a restart setting) keeps the kind's. What depends on the kind,
// such as instances ≤ the kind's keyGroups or window settings on a kind
// that has none, is checked by Validate on the result and by the server.
// base is not modified.
func Metadata(m api.Manifest, base core.Metadata) core.Metadata {
	meta := base
	meta.Name = m.Name
	if m.Instances > 0 {
		meta.Parallelism = m.Instances
	}
	if m.KeyGroups > 0 {
		meta.KeyGroups = m.KeyGroups
	}
	if m.Inputs != nil {
		meta.Inputs = make([]core.Input, 0, len(m.Inputs))
		for _, in := range m.Inputs {
			rt, _ := core.ParseRouting(in.Routing) // validated
			meta.Inputs = append(meta.Inputs, core.Input{Stream: in.Stream, Routing: rt})
		}
	} else {
		meta.Inputs = slices.Clone(base.Inputs)
	}
	if m.Outputs != nil {
		meta.Outputs = slices.Clone(m.Outputs)
	} else {
		meta.Outputs = slices.Clone(base.Outputs)
	}
	if r := m.Restart; r != nil {
		if r.MaxRestarts > 0 {
			meta.Restart.MaxRestarts = r.MaxRestarts
		}
		if r.DeadLetterAfter > 0 {
			meta.Restart.DeadLetterAfter = r.DeadLetterAfter
		}
		for _, d := range []struct {
			s    string
			into *time.Duration
		}{{r.Window, &meta.Restart.Window}, {r.InitialBackoff, &meta.Restart.InitialBackoff}, {r.MaxBackoff, &meta.Restart.MaxBackoff}} {
			if v, err := time.ParseDuration(d.s); err == nil && v > 0 {
				*d.into = v
			}
		}
	}
	if w := m.Watermarks; w != nil {
		ws := core.WatermarkStrategy{}
		if base.Watermarks != nil {
			ws = *base.Watermarks
		}
		for _, d := range []struct {
			s    string
			into *time.Duration
		}{{w.OutOfOrderness, &ws.OutOfOrderness}, {w.Idleness, &ws.Idleness}, {w.Interval, &ws.Interval}} {
			if v, err := time.ParseDuration(d.s); err == nil && v >= 0 {
				*d.into = v
			}
		}
		meta.Watermarks = &ws
	}
	if m.Window != nil {
		w := windowSpec(*m.Window, base.Window)
		meta.Window = &w
	}
	if a := m.Autoscale; a != nil {
		s := core.AutoscaleSpec{Min: a.Min, Max: a.Max, TargetUtilization: a.TargetUtilization, DryRun: a.DryRun}
		s.ScaleDownAfter, _ = time.ParseDuration(cmp.Or(a.ScaleDownAfter, "0")) // validated
		s.CoolDown, _ = time.ParseDuration(cmp.Or(a.CoolDown, "0"))
		meta.Autoscale = &s
	}
	if rt, err := core.ParseRuntime(m.Runtime); err == nil && rt == core.RuntimeWasm { // validated
		meta.Runtime, meta.Module = rt, m.Module
	}
	return meta.WithDefaults()
}

// windowSpec returns the windows a manifest's window mapping deploys over
// the kind's (base, nil if none): with a type, the mapping's alone;
// without one, the kind's with the fields the mapping sets. Values that
// do not parse are left unset (the mapping must have passed Validate).
func windowSpec(w api.ManifestWindow, base *core.WindowSpec) core.WindowSpec {
	var s core.WindowSpec
	if w.Type != "" {
		s.Type, _ = core.ParseWindowType(w.Type)
	} else if base != nil {
		s = *base
	}
	for _, d := range []struct {
		s    string
		into *time.Duration
	}{{w.Size, &s.Size}, {w.Slide, &s.Slide}, {w.Gap, &s.Gap}, {w.Lateness, &s.Lateness}} {
		if v, err := time.ParseDuration(d.s); err == nil {
			*d.into = v
		}
	}
	if w.Count != 0 {
		s.Count = w.Count
	}
	if e, err := core.ParseWindowEmit(w.Emit); err == nil {
		s.Emit = e
	}
	return s
}
