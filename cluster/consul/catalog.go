package consul

import (
	"cmp"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/consul/api"

	"github.com/sluicehq/sluice/cluster"
)

// Service metadata keys written by this backend. User metadata is stored
// next to them under its own keys (cluster.Member.Validate keeps those
// out of the reserved "sluice_" prefix).
const (
	metaID      = cluster.ReservedMetaPrefix + "id"
	metaHTTP    = cluster.ReservedMetaPrefix + "http"
	metaVersion = cluster.ReservedMetaPrefix + "version"
	metaKinds   = cluster.ReservedMetaPrefix + "kinds" // comma-separated, sorted
)

// serviceID is the Consul service ID of member id. Prefixing the service
// name keeps Sluice IDs apart from other services on the same agent.
func (d *Discovery) serviceID(id string) string { return d.cfg.Service + "-" + id }

// checkID is the ID of the TTL check of member id.
func (d *Discovery) checkID(id string) string { return d.serviceID(id) + ":ttl" }

// registration is the catalog entry for m, which must be valid.
func (d *Discovery) registration(m cluster.Member) *api.AgentServiceRegistration {
	m = m.Normalize()
	host, portStr, _ := net.SplitHostPort(m.Address) // validated by Member.Validate
	port, _ := strconv.Atoi(portStr)
	meta := map[string]string{metaID: m.ID}
	for k, v := range m.Meta {
		meta[k] = v
	}
	if m.HTTPAddr != "" {
		meta[metaHTTP] = m.HTTPAddr
	}
	if m.Version != "" {
		meta[metaVersion] = m.Version
	}
	if len(m.Kinds) > 0 {
		meta[metaKinds] = strings.Join(m.Kinds, ",")
	}
	return &api.AgentServiceRegistration{
		ID:      d.serviceID(m.ID),
		Name:    d.cfg.Service,
		Tags:    m.Kinds,
		Address: host,
		Port:    port,
		Meta:    meta,
		Check: &api.AgentServiceCheck{
			CheckID:                        d.checkID(m.ID),
			Name:                           "Sluice heartbeat",
			Notes:                          "TTL refreshed by the node every " + d.cfg.HeartbeatInterval.String() + "; critical means the node stopped (crash, hang or partition).",
			TTL:                            d.cfg.TTL.String(),
			Status:                         api.HealthPassing, // visible at once, not after the first heartbeat
			DeregisterCriticalServiceAfter: d.cfg.DeregisterCriticalServiceAfter.String(),
		},
	}
}

// members turns the entries of the health endpoint into the alive
// members (every check passing, node checks included, as Consul's
// ?passing filter does) and the set of IDs Consul knows in any state.
// Entries of the service not written by this backend (no metaID) are
// ignored. If one ID appears twice (a node re-registered on another agent
// before its old entry expired) the entry modified last decides.
func members(entries []*api.ServiceEntry) (alive []cluster.Member, known map[string]bool) {
	slices.SortFunc(entries, func(a, b *api.ServiceEntry) int {
		return cmp.Or(
			cmp.Compare(b.Service.ModifyIndex, a.Service.ModifyIndex),
			strings.Compare(a.Node.Node, b.Node.Node),
			strings.Compare(a.Service.ID, b.Service.ID),
		)
	})
	known = map[string]bool{}
	for _, e := range entries {
		m, ok := member(e)
		if !ok || known[m.ID] {
			continue
		}
		known[m.ID] = true
		if healthy(e) {
			alive = append(alive, m)
		}
	}
	return alive, known
}

// healthy reports whether every check of e passes, but for the member's
// own TTL check, which may also be a warning: a member that reported
// itself unhealthy (Discovery.SetHealth) is still alive and keeps its
// instances, only taking no work for now.
func healthy(e *api.ServiceEntry) bool {
	for _, c := range e.Checks {
		switch {
		case c.Status == api.HealthPassing:
		case c.Status == api.HealthWarning && c.ServiceID == e.Service.ID && strings.HasSuffix(c.CheckID, ":ttl"):
		default:
			return false
		}
	}
	return true
}

func member(e *api.ServiceEntry) (cluster.Member, bool) {
	s := e.Service
	if s == nil {
		return cluster.Member{}, false
	}
	id := s.Meta[metaID]
	if id == "" {
		return cluster.Member{}, false
	}
	host := s.Address
	if host == "" && e.Node != nil {
		host = e.Node.Address
	}
	m := cluster.Member{
		ID:       id,
		Address:  net.JoinHostPort(host, strconv.Itoa(s.Port)),
		HTTPAddr: s.Meta[metaHTTP],
		Version:  s.Meta[metaVersion],
		Kinds:    s.Tags,
	}
	if k := s.Meta[metaKinds]; k != "" {
		m.Kinds = strings.Split(k, ",")
	}
	for k, v := range s.Meta {
		if !strings.HasPrefix(k, cluster.ReservedMetaPrefix) {
			if m.Meta == nil {
				m.Meta = map[string]string{}
			}
			m.Meta[k] = v
		}
	}
	return m.Normalize(), true
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}
