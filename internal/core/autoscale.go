package core

import (
	"cmp"
	"fmt"
	"time"
)

// AutoscaleSpec turns on the autoscaler for an operator (Metadata.Autoscale;
// nil means off): from its instances' measured busy time and the demand on
// its input, the autoscaler recommends a parallelism between Min and Max
// and, unless DryRun, applies it (package autoscale, docs/autoscaling.md).
type AutoscaleSpec struct {
	// Min is the fewest instances; 0 means 1.
	Min int `json:"min,omitempty"`
	// Max is the most instances; 0 means the key-group count. It is never
	// more than the key-group count.
	Max int `json:"max,omitempty"`
	// TargetUtilization is the busy fraction (0–1] the autoscaler sizes
	// each instance for; 0 means DefaultTargetUtilization.
	TargetUtilization float64 `json:"targetUtilization,omitempty"`
	// ScaleDownAfter is the stabilisation window of down-scales: fewer
	// instances are applied only once every recommendation over this long
	// said fewer (and then the most of them); 0 means
	// DefaultScaleDownAfter. Up-scales are applied at once.
	ScaleDownAfter time.Duration `json:"scaleDownAfter,omitempty"`
	// CoolDown is the least time after a change before the next one; 0
	// means DefaultCoolDown.
	CoolDown time.Duration `json:"coolDown,omitempty"`
	// DryRun makes the autoscaler only recommend (sluice autoscale status,
	// GET /v1/autoscale, the journal), never scale.
	DryRun bool `json:"dryRun,omitempty"`
}

// Defaults of AutoscaleSpec's fields left zero.
const (
	DefaultTargetUtilization = 0.7
	DefaultScaleDownAfter    = 5 * time.Minute
	DefaultCoolDown          = time.Minute
)

// WithDefaults returns a copy of a with every zero field set to its
// default, Max to keyGroups.
func (a AutoscaleSpec) WithDefaults(keyGroups int) AutoscaleSpec {
	a.Min, a.Max = cmp.Or(a.Min, 1), cmp.Or(a.Max, keyGroups)
	a.TargetUtilization = cmp.Or(a.TargetUtilization, DefaultTargetUtilization)
	a.ScaleDownAfter, a.CoolDown = cmp.Or(a.ScaleDownAfter, DefaultScaleDownAfter), cmp.Or(a.CoolDown, DefaultCoolDown)
	return a
}

// Equal reports whether a and o are the same settings (both nil, or equal
// fields).
func (a *AutoscaleSpec) Equal(o *AutoscaleSpec) bool {
	if a == nil || o == nil {
		return a == o
	}
	return *a == *o
}

// problem returns the field (under "autoscale.") and what is wrong with
// a, for an operator with keyGroups key groups, or "" when it is valid.
func (a AutoscaleSpec) problem(keyGroups int) (field, problem string) {
	switch {
	case a.Min < 0:
		return "min", fmt.Sprintf("must be ≥ 0 (0 for 1), got %d", a.Min)
	case a.Max < 0:
		return "max", fmt.Sprintf("must be ≥ 0 (0 for the key-group count, %d), got %d", keyGroups, a.Max)
	case a.Max > keyGroups:
		return "max", fmt.Sprintf("must be ≤ keyGroups (%d): an operator has at most one instance per key group, got %d", keyGroups, a.Max)
	case a.Min > keyGroups:
		return "min", fmt.Sprintf("must be ≤ keyGroups (%d), got %d", keyGroups, a.Min)
	case a.Max != 0 && a.Min > a.Max:
		return "min", fmt.Sprintf("must be ≤ max (%d), got %d", a.Max, a.Min)
	case a.TargetUtilization < 0 || a.TargetUtilization > 1:
		return "targetUtilization", fmt.Sprintf("must be in (0, 1] (0 for the default, %v), got %v", DefaultTargetUtilization, a.TargetUtilization)
	case a.ScaleDownAfter < 0:
		return "scaleDownAfter", fmt.Sprintf("must be ≥ 0 (0 for the default, %v), got %v", DefaultScaleDownAfter, a.ScaleDownAfter)
	case a.CoolDown < 0:
		return "coolDown", fmt.Sprintf("must be ≥ 0 (0 for the default, %v), got %v", DefaultCoolDown, a.CoolDown)
	}
	return "", ""
}
