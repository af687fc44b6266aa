package mesostest

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
)

// fixedScale is the fixed-point scale used for scalar resources. Mesos
// itself stores scalars with three decimal digits of precision, so
// arithmetic is done on integers of thousandths to avoid float drift.
const fixedScale = 1000

// Minimum allocatable resources, mirroring the Mesos master default
// --min_allocatable_resources=cpus:0.01|mem:32: an agent's unused
// resources are only offered when they contain at least this much cpus
// or mem.
const (
	minAllocatableCPUs = 10 // 0.01 cpus in thousandths
	minAllocatableMem  = 32 * fixedScale
)

// Resources is a snapshot of the scalar resources the test master models
// for an agent or an offer.
type Resources struct {
	// CPUs is the "cpus" scalar.
	CPUs float64
	// Mem is the "mem" scalar in MB.
	Mem float64
	// Disk is the "disk" scalar in MB.
	Disk float64
}

// scalars is a set of named scalar resources in fixed-point thousandths.
// Names of reserved or non-scalar resources are decorated (see
// scalarsFromMesos) so that they never match the unreserved resources the
// test master offers.
type scalars map[string]int64

func toFixed(v float64) int64   { return int64(math.Round(v * fixedScale)) }
func fromFixed(v int64) float64 { return float64(v) / fixedScale }

func newScalars(cpus, mem, disk float64) scalars {
	return scalars{"cpus": toFixed(cpus), "mem": toFixed(mem), "disk": toFixed(disk)}
}

func (s scalars) clone() scalars {
	c := make(scalars, len(s))
	for k, v := range s {
		c[k] = v
	}
	return c
}

func (s scalars) add(o scalars) {
	for k, v := range o {
		s[k] += v
	}
}

func (s scalars) sub(o scalars) {
	for k, v := range o {
		s[k] -= v
	}
}

// contains reports whether every positive quantity in o is available in s.
func (s scalars) contains(o scalars) bool {
	for k, v := range o {
		if v > 0 && s[k] < v {
			return false
		}
	}
	return true
}

// isEmpty reports whether s holds no positive quantity.
func (s scalars) isEmpty() bool {
	for _, v := range s {
		if v > 0 {
			return false
		}
	}
	return true
}

// allocatable reports whether s is big enough to be offered.
func (s scalars) allocatable() bool {
	return s["cpus"] >= minAllocatableCPUs || s["mem"] >= minAllocatableMem
}

func (s scalars) names() []string {
	names := make([]string, 0, len(s))
	for k, v := range s {
		if v > 0 {
			names = append(names, k)
		}
	}
	sort.Slice(names, func(i, j int) bool { return resourceOrder(names[i]) < resourceOrder(names[j]) })
	return names
}

// resourceOrder sorts cpus, mem, disk first (as Mesos prints them), then
// everything else alphabetically.
func resourceOrder(name string) string {
	switch name {
	case "cpus":
		return "0"
	case "mem":
		return "1"
	case "disk":
		return "2"
	}
	return "3" + name
}

// String formats s like Mesos formats resources: "cpus:1;mem:128".
func (s scalars) String() string {
	var b strings.Builder
	for i, k := range s.names() {
		if i > 0 {
			b.WriteByte(';')
		}
		b.WriteString(k)
		b.WriteByte(':')
		b.WriteString(strconv.FormatFloat(fromFixed(s[k]), 'f', -1, 64))
	}
	if b.Len() == 0 {
		return "{}"
	}
	return b.String()
}

func (s scalars) snapshot() Resources {
	return Resources{CPUs: fromFixed(s["cpus"]), Mem: fromFixed(s["mem"]), Disk: fromFixed(s["disk"])}
}

// toMesos converts s to unreserved ("*") scalar resources allocated to
// role, the shape in which a Mesos 1.x master offers them.
func (s scalars) toMesos(role string) []mesos.Resource {
	names := s.names()
	out := make([]mesos.Resource, 0, len(names))
	for _, name := range names {
		star := "*"
		allocRole := role
		out = append(out, mesos.Resource{
			Name:           name,
			Type:           mesos.SCALAR.Enum(),
			Scalar:         &mesos.Value_Scalar{Value: fromFixed(s[name])},
			Role:           &star,
			AllocationInfo: &mesos.Resource_AllocationInfo{Role: &allocRole},
		})
	}
	return out
}

// scalarsFromMesos converts task resources into scalars. Scalar resources
// that are unreserved (role unset or "*") keep their plain name; reserved,
// shared or non-scalar resources get a decorated name the test master never
// offers, so requesting them fails the "more than available" check like it
// would on an agent that does not have them.
func scalarsFromMesos(rs []mesos.Resource) (scalars, error) {
	out := scalars{}
	for _, r := range rs {
		if r.Name == "" {
			return nil, fmt.Errorf("empty resource name")
		}
		key := r.Name
		reserved := len(r.Reservations) > 0 || r.Reservation != nil || (r.Role != nil && *r.Role != "*" && *r.Role != "")
		if reserved {
			key = fmt.Sprintf("%s(reserved)", r.Name)
		}
		if r.GetType() != mesos.SCALAR {
			out[fmt.Sprintf("%s(%s)", key, r.GetType())] += fixedScale
			continue
		}
		if r.Scalar == nil {
			return nil, fmt.Errorf("scalar resource %q has no 'scalar' value", r.Name)
		}
		v := r.Scalar.Value
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return nil, fmt.Errorf("invalid scalar resource %s:%v", r.Name, v)
		}
		out[key] += toFixed(v)
	}
	return out, nil
}
