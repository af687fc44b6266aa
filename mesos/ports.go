package mesos

import (
	mesos "github.com/mesos/mesos-go/api/v1/lib"
)

// Networking. Every node task gets nodePorts ports from the "ports"
// resource of its offer: the first for its actor endpoint (SLUICE_BIND,
// advertised as SLUICE_ADVERTISE and in Consul), the second for its
// control API (SLUICE_HTTP), both on the agent's hostname, so that nodes
// on other hosts reach them, and on ports Mesos allocated to the task
// (an agent with the network/ports isolator kills a task listening on
// others).

// nodePorts is how many ports a node task asks for.
const nodePorts = 2

// portSet is the free ports of one offered "ports" resource.
type portSet []mesos.Value_Range

func portsOf(r *mesos.Resource) portSet {
	var s portSet
	for _, rg := range r.GetRanges().GetRange() {
		if rg.End >= rg.Begin {
			s = append(s, rg)
		}
	}
	return s
}

func (s portSet) count() int64 {
	var n int64
	for _, r := range s {
		n += int64(r.End - r.Begin + 1)
	}
	return n
}

// take removes the n lowest ports of s (n ≤ count) and returns them.
func (s *portSet) take(n int64) []uint64 {
	var out []uint64
	for len(*s) > 0 && int64(len(out)) < n {
		r := &(*s)[0]
		out = append(out, r.Begin)
		if r.Begin == r.End {
			*s = (*s)[1:]
		} else {
			r.Begin++
		}
	}
	return out
}

// rangesOf returns ports as single-port ranges, merged where adjacent.
func rangesOf(ports []uint64) *mesos.Value_Ranges {
	rs := &mesos.Value_Ranges{}
	for _, p := range ports {
		if n := len(rs.Range); n > 0 && rs.Range[n-1].End+1 == p {
			rs.Range[n-1].End = p
			continue
		}
		rs.Range = append(rs.Range, mesos.Value_Range{Begin: p, End: p})
	}
	return rs
}
