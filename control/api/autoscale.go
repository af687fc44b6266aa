package api

import "time"

// AutoscaleStatus is the answer of GET /v1/autoscale: the autoscaler's
// latest decision for every operator it watches (those deployed with
// autoscale settings), in dry-run too.
type AutoscaleStatus struct {
	// Node answered; Leader is the member whose autoscaler applies
	// decisions (the lowest id). Every node computes them; only the
	// leader scales and journals.
	Node   string `json:"node"`
	Leader string `json:"leader"`
	// Operators are the latest decisions, by operator name.
	Operators []AutoscaleDecision `json:"operators"`
}

// AutoscaleDecision is the autoscaler's latest decision for one operator.
type AutoscaleDecision struct {
	Operator string    `json:"operator"`
	At       time.Time `json:"at"`
	// Current is the parallelism now, Recommended what the operator
	// needs (Current when no change is due).
	Current     int `json:"current"`
	Recommended int `json:"recommended"`
	// Scale says the change is due now; Applied that the leader applied
	// it (not in dry-run).
	Scale   bool `json:"scale"`
	Applied bool `json:"applied,omitempty"`
	DryRun  bool `json:"dryRun,omitempty"`
	// Skewed says one instance is a hot spot that more instances would
	// not spread.
	Skewed bool   `json:"skewed,omitempty"`
	Reason string `json:"reason"`
	// Inputs are what it was computed from (rates in records/s, fractions
	// 0–1).
	Inputs AutoscaleInputs `json:"inputs"`
}

// AutoscaleInputs are the measurements behind an AutoscaleDecision,
// averaged over its window.
type AutoscaleInputs struct {
	Samples     int           `json:"samples"`
	Window      time.Duration `json:"window"`
	InputRate   float64       `json:"inputRate"`
	Rate        float64       `json:"rate"`
	TrueRate    float64       `json:"trueRate"`
	Busy        float64       `json:"busy"`
	Blocked     float64       `json:"blocked"`
	Utilization float64       `json:"utilization"`
	Queued      int64         `json:"queued"`
	HotInstance int           `json:"hotInstance"`
	HotBusy     float64       `json:"hotBusy"`
	OthersBusy  float64       `json:"othersBusy"`
}
