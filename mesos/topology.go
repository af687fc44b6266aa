package mesos

import (
	"context"
	"strings"

	"github.com/sluicehq/sluice/sdk/nodeenv"
	"github.com/sluicehq/sluice/topology"
)

// Defaults for operators deployed with an executable but without
// resources in their manifest.
const (
	DefaultOperatorCPUs = 1
	DefaultOperatorMem  = 256
	DefaultOperatorDisk = 256
)

// PoolsFromTopology turns every deployed operator whose manifest names an
// executable into a pool of node tasks: this is how the framework is the
// launcher of operator "slugs" in production. Each task runs the
// executable (fetched into the sandbox) hosting only the operator's kind
// (SLUICE_HOST, SLUICE_HOST_ONLY); the pool has one task per operator
// instance, with the manifest's cpus, mem, disk and retries.
func PoolsFromTopology(t topology.Topology) []Pool {
	var pools []Pool
	for _, spec := range t.Operators {
		if spec.Executable == "" {
			continue
		}
		env := map[string]string{nodeenv.Host: spec.Kind, nodeenv.HostOnly: "1"}
		for k, v := range spec.Env {
			env[k] = v
		}
		p := Pool{
			Name:      poolName(spec.Meta.Name),
			Instances: spec.Meta.Parallelism,
			CPUs:      orDefault(spec.CPUs, DefaultOperatorCPUs),
			Mem:       orDefault(spec.Mem, DefaultOperatorMem),
			Disk:      orDefault(spec.Disk, DefaultOperatorDisk),
			Retries:   spec.Retries,
			Env:       env,
		}
		exe := spec.Executable
		name := exe[strings.LastIndex(exe, "/")+1:]
		p.URIs = []URI{{Value: exe, Executable: true}}
		p.Command = Command{Value: "./" + name}
		pools = append(pools, p)
	}
	return pools
}

// WatchTopology feeds the scheduler the pools of the given pools file plus
// those of the cluster's topology, on every topology change, until ctx
// ends.
func (s *Scheduler) WatchTopology(ctx context.Context, store topology.Store, filePools []Pool) {
	for t := range store.Watch(ctx) {
		pools := append(append([]Pool(nil), filePools...), PoolsFromTopology(t)...)
		if err := s.SetPools(pools); err != nil {
			s.cfg.Logger.Error("pools from the topology rejected", "err", err)
		}
	}
}

// poolName maps an operator name to a valid pool name.
func poolName(op string) string {
	b := []byte("op-" + op)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	if len(b) > 64 {
		b = b[:64]
	}
	return string(b)
}

func orDefault(v, def float64) float64 {
	if v == 0 {
		return def
	}
	return v
}
