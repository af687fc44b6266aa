package mesostest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
)

// PortRange is an inclusive range of ports, as in a Mesos RANGES
// resource ("ports:[31000-31009]").
type PortRange struct {
	Begin, End uint64
}

// rangeSet is a set of ports kept as sorted, disjoint, non-adjacent
// ranges. The zero value is empty.
type rangeSet []PortRange

func (s rangeSet) clone() rangeSet { return slices.Clone(s) }

// normalize sorts and merges overlapping and adjacent ranges.
func (s rangeSet) normalize() rangeSet {
	out := slices.Clone(s)
	out = slices.DeleteFunc(out, func(r PortRange) bool { return r.End < r.Begin })
	slices.SortFunc(out, func(a, b PortRange) int {
		switch {
		case a.Begin < b.Begin:
			return -1
		case a.Begin > b.Begin:
			return 1
		}
		return 0
	})
	merged := out[:0]
	for _, r := range out {
		if n := len(merged); n > 0 && r.Begin <= merged[n-1].End+1 {
			merged[n-1].End = max(merged[n-1].End, r.End)
			continue
		}
		merged = append(merged, r)
	}
	if len(merged) == 0 {
		return nil
	}
	return merged
}

func (s rangeSet) union(o rangeSet) rangeSet { return append(s.clone(), o...).normalize() }

// minus returns the ports of s not in o.
func (s rangeSet) minus(o rangeSet) rangeSet {
	var out rangeSet
	for _, r := range s {
		parts := rangeSet{r}
		for _, x := range o {
			var next rangeSet
			for _, p := range parts {
				if x.End < p.Begin || x.Begin > p.End {
					next = append(next, p)
					continue
				}
				if x.Begin > p.Begin {
					next = append(next, PortRange{p.Begin, x.Begin - 1})
				}
				if x.End < p.End {
					next = append(next, PortRange{x.End + 1, p.End})
				}
			}
			parts = next
		}
		out = append(out, parts...)
	}
	return out.normalize()
}

// contains reports whether every port of o is in s.
func (s rangeSet) contains(o rangeSet) bool { return len(o.minus(s)) == 0 }

func (s rangeSet) count() uint64 {
	var n uint64
	for _, r := range s {
		n += r.End - r.Begin + 1
	}
	return n
}

// String formats s as Mesos does: "[31000-31009, 31020-31020]".
func (s rangeSet) String() string {
	parts := make([]string, len(s))
	for i, r := range s {
		parts[i] = fmt.Sprintf("%d-%d", r.Begin, r.End)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// FreePorts returns n loopback TCP ports that are free now, outside the
// kernel's ephemeral port range (so that sockets bound to port 0 by other
// programs are not handed them in the meantime), as ranges for
// AgentSpec.Ports. They are picked at random from 10000 up to the start of
// the ephemeral range, each checked by binding it.
func FreePorts(n int) ([]PortRange, error) { return freePorts(n, nil) }

// freePorts is FreePorts, not picking any port of exclude.
func freePorts(n int, exclude rangeSet) ([]PortRange, error) {
	if n <= 0 {
		return nil, nil
	}
	lo, hi := uint64(10000), ephemeralStart()-1
	if hi <= lo+uint64(n) {
		return nil, fmt.Errorf("mesostest: no room for %d ports below the ephemeral range (%d)", n, hi+1)
	}
	var picked rangeSet
	for tries := 0; len(picked) < n && tries < 100*n; tries++ {
		p := lo + rand.Uint64N(hi-lo)
		if (rangeSet{{p, p}}).minus(picked) == nil || exclude.contains(rangeSet{{p, p}}) {
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.FormatUint(p, 10)))
		if err != nil {
			continue
		}
		_ = ln.Close()
		picked = append(picked, PortRange{p, p})
	}
	if len(picked) < n {
		return nil, fmt.Errorf("mesostest: found only %d of %d free ports", len(picked), n)
	}
	return picked.normalize(), nil
}

// ephemeralStart returns the first port of the kernel's ephemeral range
// (32768 where it cannot be read).
func ephemeralStart() uint64 {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.ParseUint(f[0], 10, 16); err == nil && v > 1024 {
				return v
			}
		}
	}
	return 32768
}
