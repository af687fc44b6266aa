// Package autoscale is the autoscaler's policy: pure functions and a
// stateful Policy with no I/O, fed by the controller (control) with what
// the nodes measure and asked for the parallelism each operator needs.
//
// From two snapshots of the cluster's counters (Snapshot: per instance the
// records processed and produced, the time busy and blocked, the mailbox
// depth), Samples derives per operator one Sample of an interval: its
// rate, each instance's busy and blocked fractions, and the demand on its
// input, InputRate: the rate it takes, corrected by how much its upstream
// is held back (an upstream blocked a fraction b of the time by
// backpressure would produce 1/(1−b) times as much; the correction
// compounds along the stream graph from the sources, and the growth of
// the mailboxes is added).
//
// Policy.Decide averages an operator's samples over a window and applies
// FLIP-271's "true processing rate" method: an instance's true rate is
// what it processed divided by the time it was busy, so the instances
// needed are
//
//	ceil(InputRate ÷ (true rate per instance × target utilization))
//
// bounded by the settings' Min and Max and the key-group count. No change
// is recommended while the utilization at the current parallelism is
// within Config.Band of the target (hysteresis) or before CoolDown has
// passed since the last change; an up-scale is applied at once, a
// down-scale only after every recommendation over ScaleDownAfter said
// fewer (the most of them is taken). When one instance is busy and the
// others idle (a hot key group: more instances would not spread it) the
// Decision says so and does not scale up. Every Decision carries its
// inputs and a reason a person can read.
package autoscale
