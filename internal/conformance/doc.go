// Package conformance holds the suite that keeps sdk/sdktest true to the
// runtime: the same operators (keyed counting with state, event-time
// timers, a callback that fails once and is rolled back, a rescale over
// key groups) run through
// sdktest's Graph and Harness and through the real embedded runtime
// (sdk/node, in process), and the suite compares what they produced, the
// state they left and the timers that fired. sdktest re-implements the
// runtime's key groups, timers and rollback; where the two differ, this
// suite fails. It has no non-test code besides this comment.
package conformance
