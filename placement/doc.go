// Package placement holds the pure functions that decide where a record and
// an operator instance go. It has no I/O and no state: every node computes
// the same answer from the same inputs.
//
// Placement has three layers:
//
//	record key ──hash──▶ key group          KeyGroup: fixed per operator (e.g. 256)
//	key group  ──range─▶ instance index     InstanceFor / GroupRange: changes on scale
//	instance   ──hash──▶ node               Assign (rendezvous hashing): changes on join/leave/crash
//
// Key groups are assigned to instances in contiguous ranges, so rescaling an
// operator moves whole key groups, and with them whole ranges of state.
// Instances are placed on nodes by rendezvous (highest random weight)
// hashing, so that adding a node to N moves about 1/(N+1) of the instances and
// removing a node moves only the instances it held.
package placement
