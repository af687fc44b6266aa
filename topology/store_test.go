package topology_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/internal/consultest"
	"github.com/sluicehq/sluice/persistence"
	"github.com/sluicehq/sluice/topology"
	"github.com/sluicehq/sluice/topology/topologytest"
)

// The deprecated in-package backends pass the suite until they are deleted.

func TestPebbleStore(t *testing.T) {
	topologytest.RunStoreSuite(t, func(t *testing.T) topology.Store {
		db, err := persistence.Open(t.TempDir(), persistence.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		return topology.NewPebbleStore(db)
	})
}

func TestConsulStore(t *testing.T) {
	agent := consultest.Start(t)
	var n atomic.Int64
	topologytest.RunStoreSuite(t, func(t *testing.T) topology.Store {
		s, err := topology.NewConsulStore(agent.Addr(), fmt.Sprintf("suite-%d", n.Add(1)), nil)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
