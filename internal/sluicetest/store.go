package sluicetest

import (
	"github.com/sluicehq/sluice/persistence"
	"github.com/sluicehq/sluice/topology"
	tpebble "github.com/sluicehq/sluice/topology/pebble"
)

// LocalStore is the embedded mode's topology store on a node's own
// database (topology/pebble), for the actors.Config.LocalStore of tests
// that start a node themselves.
func LocalStore(db *persistence.DB) topology.Store { return tpebble.New(db) }
