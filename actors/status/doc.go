// Package status is what a node publishes about itself: its health (the
// Monitor: free disk, a failed state database, fencing), the status of its
// operators and instances (OperatorStatus, InstanceStatus, Collect), the
// latest dead letters it shows (DeadLetters), its journal of cluster
// events (Journal, Event), and the Observer hooks through which telemetry
// attaches from outside the runtime (package telemetry implements them).
//
// The package does not know the node: the Monitor reaches it through the
// Node interface (report the health to the membership, resume the
// instances), which package actors implements; the rest are values and
// safe-for-concurrent-use containers the node fills.
//
// # Files
//
//	health.go       Health, its causes, and the Monitor that keeps it
//	status.go       InstanceState, OperatorStatus, InstanceStatus; Collect
//	deadletters.go  DeadLetter and the latest ones per operator; ClipText
//	journal.go      Event, its kinds, and the Journal of cluster events
//	observer.go     Observer and its optional extensions, SpanInfo, Stage
//
// A record never passes through this package; an instance calls the
// Observer for a sample of them.
package status
