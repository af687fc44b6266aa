package pebble_test

import (
	"testing"

	"github.com/sluicehq/sluice/persistence"
	"github.com/sluicehq/sluice/topology"
	"github.com/sluicehq/sluice/topology/pebble"
	"github.com/sluicehq/sluice/topology/topologytest"
)

func newStore(t *testing.T) *pebble.Store {
	db, err := persistence.Open(t.TempDir(), persistence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Error(err)
		}
	})
	return pebble.New(db)
}

func TestStore(t *testing.T) {
	topologytest.RunStoreSuite(t, func(t *testing.T) topology.Store { return newStore(t) })
}

func TestRestorer(t *testing.T) {
	topologytest.RunRestorerSuite(t, func(t *testing.T) topology.RestorableStore { return newStore(t) })
}
