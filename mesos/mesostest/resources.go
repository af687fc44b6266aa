package mesostest

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
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

// kind identifies interchangeable resources: same name, same reservation,
// same persistent volume. Two resources of different kinds never satisfy
// each other, as in Mesos' Resources::contains.
type kind struct {
	name string
	// role is the reservation role; "" for unreserved ("*") resources.
	role string
	// static reservations come from the agent's configuration; dynamic
	// ones from RESERVE, by principal.
	static    bool
	principal string
	// volume is the persistence ID of a persistent volume ("" for plain
	// disk), path its container path.
	volume string
	path   string
}

func (k kind) reserved() bool { return k.role != "" }

// unreserved is k without its reservation (what RESERVE starts from).
func (k kind) unreserved() kind { return kind{name: k.name} }

// plain is k without its volume (what CREATE starts from).
func (k kind) plain() kind { k.volume, k.path = "", ""; return k }

func (k kind) String() string {
	s := k.name
	switch {
	case k.static:
		s += "(" + k.role + ")"
	case k.reserved():
		s += "(reservation: " + k.role + ", " + k.principal + ")"
	}
	if k.volume != "" {
		s += "[" + k.volume + ":" + k.path + "]"
	}
	return s
}

// resources is a bag of resources: scalars in fixed-point thousandths and
// port ranges, by kind. The zero value is empty and usable.
type resources struct {
	scalar map[kind]int64
	ranges map[kind]rangeSet
}

func toFixed(v float64) int64   { return int64(math.Round(v * fixedScale)) }
func fromFixed(v int64) float64 { return float64(v) / fixedScale }

// newResources returns unreserved cpus, mem, disk and ports.
func newResources(cpus, mem, disk float64, ports []PortRange) resources {
	var r resources
	r.addScalar(kind{name: "cpus"}, toFixed(cpus))
	r.addScalar(kind{name: "mem"}, toFixed(mem))
	r.addScalar(kind{name: "disk"}, toFixed(disk))
	r.addRanges(kind{name: "ports"}, rangeSet(ports).normalize())
	return r
}

func (r *resources) addScalar(k kind, v int64) {
	if v == 0 {
		return
	}
	if r.scalar == nil {
		r.scalar = map[kind]int64{}
	}
	r.scalar[k] += v
	if r.scalar[k] == 0 {
		delete(r.scalar, k)
	}
}

func (r *resources) addRanges(k kind, s rangeSet) {
	if len(s) == 0 {
		return
	}
	if r.ranges == nil {
		r.ranges = map[kind]rangeSet{}
	}
	r.ranges[k] = r.ranges[k].union(s)
}

func (r resources) clone() resources {
	return resources{scalar: maps.Clone(r.scalar), ranges: maps.Clone(r.ranges)}
}

func (r *resources) add(o resources) {
	for k, v := range o.scalar {
		r.addScalar(k, v)
	}
	for k, s := range o.ranges {
		r.addRanges(k, s)
	}
}

// sub removes o from r. Callers check contains first; amounts never go
// below zero.
func (r *resources) sub(o resources) {
	for k, v := range o.scalar {
		r.addScalar(k, -min(v, r.scalar[k]))
	}
	for k, s := range o.ranges {
		left := r.ranges[k].minus(s)
		if len(left) == 0 {
			delete(r.ranges, k)
		} else {
			r.ranges[k] = left
		}
	}
}

// contains reports whether every resource of o is in r.
func (r resources) contains(o resources) bool {
	for k, v := range o.scalar {
		if v > 0 && r.scalar[k] < v {
			return false
		}
	}
	for k, s := range o.ranges {
		if !r.ranges[k].contains(s) {
			return false
		}
	}
	return true
}

func (r resources) isEmpty() bool {
	for _, v := range r.scalar {
		if v > 0 {
			return false
		}
	}
	for _, s := range r.ranges {
		if len(s) > 0 {
			return false
		}
	}
	return true
}

// total returns the amount of scalar name over every kind.
func (r resources) total(name string) int64 {
	var n int64
	for k, v := range r.scalar {
		if k.name == name {
			n += v
		}
	}
	return n
}

// allocatable reports whether r is big enough to be offered.
func (r resources) allocatable() bool {
	return r.total("cpus") >= minAllocatableCPUs || r.total("mem") >= minAllocatableMem
}

// forRole returns what may be offered to a framework of role: the
// unreserved resources and those reserved for role.
func (r resources) forRole(role string) resources {
	var out resources
	for k, v := range r.scalar {
		if !k.reserved() || k.role == role {
			out.addScalar(k, v)
		}
	}
	for k, s := range r.ranges {
		if !k.reserved() || k.role == role {
			out.addRanges(k, s)
		}
	}
	return out
}

func (r resources) kinds() []kind {
	ks := slices.Collect(maps.Keys(r.scalar))
	for k := range r.ranges {
		if _, ok := r.scalar[k]; !ok {
			ks = append(ks, k)
		}
	}
	slices.SortFunc(ks, func(a, b kind) int {
		return cmp.Or(cmp.Compare(resourceOrder(a.name), resourceOrder(b.name)), cmp.Compare(a.role, b.role),
			cmp.Compare(a.principal, b.principal), cmp.Compare(a.volume, b.volume))
	})
	return ks
}

// resourceOrder sorts cpus, mem, disk, ports first (as Mesos prints
// them), then everything else alphabetically.
func resourceOrder(name string) string {
	switch name {
	case "cpus":
		return "0"
	case "mem":
		return "1"
	case "disk":
		return "2"
	case "ports":
		return "3"
	}
	return "4" + name
}

// String formats r like Mesos formats resources: "cpus:1;mem:128;ports:[31000-31001]".
func (r resources) String() string {
	var parts []string
	for _, k := range r.kinds() {
		if v, ok := r.scalar[k]; ok && v > 0 {
			parts = append(parts, k.String()+":"+strconv.FormatFloat(fromFixed(v), 'f', -1, 64))
		}
		if s := r.ranges[k]; len(s) > 0 {
			parts = append(parts, k.String()+":"+s.String())
		}
	}
	if len(parts) == 0 {
		return "{}"
	}
	return strings.Join(parts, ";")
}

// Resources is a snapshot of resources: the cpus, mem and disk scalars
// summed over reservations and volumes, and the port ranges.
type Resources struct {
	// CPUs is the "cpus" scalar.
	CPUs float64
	// Mem is the "mem" scalar in MB.
	Mem float64
	// Disk is the "disk" scalar in MB, persistent volumes included.
	Disk float64
	// Ports are the "ports" ranges.
	Ports []PortRange
}

func (r resources) snapshot() Resources {
	var ports rangeSet
	for k, s := range r.ranges {
		if k.name == "ports" {
			ports = ports.union(s)
		}
	}
	return Resources{CPUs: fromFixed(r.total("cpus")), Mem: fromFixed(r.total("mem")), Disk: fromFixed(r.total("disk")), Ports: ports}
}

// resourceFormat says how resources are shown to a framework.
type resourceFormat struct {
	// allocationRole, if set, is put into every resource's allocation_info
	// (MULTI_ROLE frameworks; MESOS-8237 strips it for the others).
	allocationRole *string
	// refinement: reservations as the "reservations" stack
	// (RESERVATION_REFINEMENT frameworks); else the "role" and
	// "reservation" fields of the pre-refinement format.
	refinement bool
}

// toMesos converts r into resources as a Mesos 1.x master shows them.
func (r resources) toMesos(f resourceFormat) []mesos.Resource {
	var out []mesos.Resource
	for _, k := range r.kinds() {
		res := mesos.Resource{Name: k.name}
		if v, ok := r.scalar[k]; ok && v > 0 {
			res.Type = mesos.SCALAR.Enum()
			res.Scalar = &mesos.Value_Scalar{Value: fromFixed(v)}
		} else if s := r.ranges[k]; len(s) > 0 {
			res.Type = mesos.RANGES.Enum()
			res.Ranges = &mesos.Value_Ranges{}
			for _, pr := range s {
				res.Ranges.Range = append(res.Ranges.Range, mesos.Value_Range{Begin: pr.Begin, End: pr.End})
			}
		} else {
			continue
		}
		switch {
		case !k.reserved() && !f.refinement:
			res.Role = ptr("*")
		case k.reserved() && f.refinement:
			typ := mesos.Resource_ReservationInfo_DYNAMIC
			ri := mesos.Resource_ReservationInfo{Role: ptr(k.role)}
			if k.static {
				typ = mesos.Resource_ReservationInfo_STATIC
			} else if k.principal != "" {
				ri.Principal = ptr(k.principal)
			}
			ri.Type = &typ
			res.Reservations = []mesos.Resource_ReservationInfo{ri}
		case k.reserved():
			res.Role = ptr(k.role)
			if !k.static {
				res.Reservation = &mesos.Resource_ReservationInfo{}
				if k.principal != "" {
					res.Reservation.Principal = ptr(k.principal)
				}
			}
		}
		if k.volume != "" {
			mode := mesos.RW
			res.Disk = &mesos.Resource_DiskInfo{
				Persistence: &mesos.Resource_DiskInfo_Persistence{ID: k.volume},
				Volume:      &mesos.Volume{ContainerPath: k.path, Mode: &mode},
			}
		}
		if f.allocationRole != nil {
			res.AllocationInfo = &mesos.Resource_AllocationInfo{Role: ptr(*f.allocationRole)}
		}
		out = append(out, res)
	}
	return out
}

// kindOf returns the kind of a resource given by a framework, accepting
// both reservation formats. Shared, revocable and resource-provider
// resources, reservation refinement and SET values are not modelled.
func kindOf(r *mesos.Resource) (kind, error) {
	k := kind{name: r.Name}
	if r.Name == "" {
		return k, fmt.Errorf("empty resource name")
	}
	switch {
	case len(r.Reservations) > 1:
		return k, fmt.Errorf("resource %s: reservation refinement is not supported by mesostest", r.Name)
	case len(r.Reservations) == 1:
		ri := r.Reservations[0]
		k.role, k.principal = ri.GetRole(), ri.GetPrincipal()
		k.static = ri.GetType() == mesos.Resource_ReservationInfo_STATIC
		if k.role == "" || k.role == "*" {
			return k, fmt.Errorf("resource %s: a reservation needs a role other than '*'", r.Name)
		}
	case r.Role != nil && *r.Role != "*" && *r.Role != "":
		k.role = *r.Role
		if r.Reservation != nil {
			k.principal = r.Reservation.GetPrincipal()
		} else {
			k.static = true
		}
	}
	if k.static {
		k.principal = ""
	}
	if r.Shared != nil || r.Revocable != nil || r.ProviderID != nil {
		return k, fmt.Errorf("resource %s: shared, revocable and provider resources are not supported by mesostest", r.Name)
	}
	if d := r.Disk; d != nil {
		if d.Source != nil {
			return k, fmt.Errorf("resource %s: disk sources are not supported by mesostest", r.Name)
		}
		if d.Persistence != nil {
			if d.Volume == nil {
				return k, fmt.Errorf("resource %s: persistent volume %s has no volume (container path)", r.Name, d.Persistence.ID)
			}
			k.volume, k.path = d.Persistence.ID, d.Volume.ContainerPath
		}
	}
	return k, nil
}

// resourcesFromMesos converts the resources of an operation.
func resourcesFromMesos(rs []mesos.Resource) (resources, error) {
	var out resources
	for i := range rs {
		r := &rs[i]
		k, err := kindOf(r)
		if err != nil {
			return resources{}, err
		}
		switch r.GetType() {
		case mesos.SCALAR:
			if r.Scalar == nil {
				return resources{}, fmt.Errorf("scalar resource %q has no 'scalar' value", r.Name)
			}
			v := r.Scalar.Value
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return resources{}, fmt.Errorf("invalid scalar resource %s:%v", r.Name, v)
			}
			out.addScalar(k, toFixed(v))
		case mesos.RANGES:
			var s rangeSet
			for _, rg := range r.GetRanges().GetRange() {
				if rg.End < rg.Begin {
					return resources{}, fmt.Errorf("invalid range [%d-%d] of resource %s", rg.Begin, rg.End, r.Name)
				}
				s = append(s, PortRange{rg.Begin, rg.End})
			}
			out.addRanges(k, s.normalize())
		default:
			return resources{}, fmt.Errorf("resource %s of type %s is not supported by mesostest", r.Name, r.GetType())
		}
	}
	return out, nil
}

func ptr[T any](v T) *T { return &v }
