package consul_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/internal/consultest"
	"github.com/sluicehq/sluice/topology"
	"github.com/sluicehq/sluice/topology/consul"
	"github.com/sluicehq/sluice/topology/topologytest"
)

// stores returns a maker of empty stores on one agent: each in a cluster
// of its own.
func stores(t *testing.T) func(t *testing.T) *consul.Store {
	agent := consultest.Start(t)
	var n atomic.Int64
	return func(t *testing.T) *consul.Store {
		s, err := consul.New(agent.Addr(), fmt.Sprintf("suite-%d", n.Add(1)), nil)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

func TestStore(t *testing.T) {
	newStore := stores(t)
	topologytest.RunStoreSuite(t, func(t *testing.T) topology.Store { return newStore(t) })
}

func TestRestorer(t *testing.T) {
	newStore := stores(t)
	topologytest.RunRestorerSuite(t, func(t *testing.T) topology.RestorableStore { return newStore(t) })
}

func TestKey(t *testing.T) {
	if got, want := consul.Key("prod"), "sluice/prod/topology"; got != want {
		t.Fatalf("Key(prod) = %q, want %q", got, want)
	}
}
