// Package integration holds Sluice's multi-process tests: real node
// processes (internal/testnode) joined through a real Consul agent
// (internal/consultest), killed, restarted and observed through their
// control API and their event logs. The package has no non-test code
// besides this comment.
package integration
