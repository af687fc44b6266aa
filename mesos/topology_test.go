package mesos

import (
	"testing"

	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/topology"
)

func TestPoolsFromTopology(t *testing.T) {
	tp := topology.Topology{Operators: []topology.OperatorSpec{
		{Kind: "count", Meta: core.Metadata{Name: "word.count", Parallelism: 3}, Executable: "http://repo/bin/wc-node", CPUs: 2, Retries: 5, Env: map[string]string{"A": "1"}},
		{Kind: "gen", Meta: core.Metadata{Name: "gen", Parallelism: 1}}, // compiled in: no pool
	}}
	pools := PoolsFromTopology(tp)
	if len(pools) != 1 {
		t.Fatalf("%d pools, want 1", len(pools))
	}
	p := pools[0]
	if p.Name != "op-word_count" || p.Instances != 3 || p.CPUs != 2 || p.Mem != DefaultOperatorMem || p.Retries != 5 {
		t.Fatalf("pool %+v", p)
	}
	if p.Command.Value != "./wc-node" || len(p.URIs) != 1 || !p.URIs[0].Executable || p.URIs[0].Value != "http://repo/bin/wc-node" {
		t.Fatalf("command %+v, uris %+v", p.Command, p.URIs)
	}
	if p.Env["SLUICE_HOST"] != "count" || p.Env["SLUICE_HOST_ONLY"] != "1" || p.Env["A"] != "1" {
		t.Fatalf("env %v", p.Env)
	}
	if err := ValidatePools(pools); err != nil {
		t.Fatalf("generated pools are invalid: %v", err)
	}
}
