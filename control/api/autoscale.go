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
	// Nodes is the node recommendation (nil before the first sample).
	Nodes *AutoscaleNodes `json:"nodes,omitempty"`
}

// AutoscaleNodes is the node recommendation: the nodes the operators'
// demand needs, at a node's capacity. A cluster without the Mesos
// framework only reports it; the framework reads Instances and sizes its
// autoscaled pool with its own capacity (docs/autoscaling.md).
type AutoscaleNodes struct {
	// Members is the nodes now.
	Members int `json:"members"`
	// Instances is the operator instances needed in total: each
	// autoscaled operator's more of current and needed (a skewed one's
	// current), every other operator's parallelism.
	Instances int `json:"instances"`
	// PerNode is a node's capacity in instances, from CPUs (the node's
	// cpus) × the instances per cpu.
	PerNode int     `json:"perNode"`
	CPUs    float64 `json:"cpus"`
	// Recommended is the nodes Instances need.
	Recommended int    `json:"recommended"`
	Reason      string `json:"reason"`
}

// AutoscaleDecision is the autoscaler's latest decision for one operator.
type AutoscaleDecision struct {
	Operator string    `json:"operator"`
	At       time.Time `json:"at"`
	// Current is the parallelism now, Recommended what the operator
	// needs (Current when no change is due).
	Current     int `json:"current"`
	Recommended int `json:"recommended"`
	// Needed is the instances the demand needs (before cool-down and
	// stabilisation), what it counts for in the node recommendation; a
	// skewed operator's is Current.
	Needed int `json:"needed"`
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
	// HotGroups are the hot instance's key groups [first, end).
	HotGroups  [2]int  `json:"hotGroups"`
	HotBusy    float64 `json:"hotBusy"`
	OthersBusy float64 `json:"othersBusy"`
}
