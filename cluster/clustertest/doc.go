// Package clustertest is the conformance suite for cluster.Discovery
// backends, and helpers to watch membership in tests.
//
// A backend's test calls RunDiscoverySuite with a function that makes a
// fresh Backend (one isolated cluster) per subtest:
//
//	func TestConformance(t *testing.T) {
//		clustertest.RunDiscoverySuite(t, func(t *testing.T) clustertest.Backend {
//			return &myBackend{...}
//		})
//	}
//
// Each subtest measures what it can (leave and crash detection times) and
// reports it with t.Logf. [Watcher] records and checks every snapshot of a
// Watch channel; backend-specific tests use it too.
package clustertest
