// Package topologytest is the conformance suite of topology.Store: every
// backend (topology/consul, topology/pebble) and every wrapper
// (topology.Guard) runs it from its tests.
//
//	func TestStore(t *testing.T) {
//		topologytest.RunStoreSuite(t, func(t *testing.T) topology.Store {
//			return newEmptyStore(t) // cleaned up by t.Cleanup
//		})
//	}
//
// Stores that implement topology.Restorer also run RunRestorerSuite.
package topologytest
