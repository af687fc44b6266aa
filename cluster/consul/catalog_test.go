package consul

import (
	"reflect"
	"testing"

	"github.com/hashicorp/consul/api"

	"github.com/sluicehq/sluice/cluster"
)

// The registration and the catalog entries read back describe the same
// member.
func TestRegistrationRoundTrip(t *testing.T) {
	d := &Discovery{cfg: DefaultConfig()}
	m := cluster.Member{
		ID: "n1", Address: "10.0.0.5:8090", HTTPAddr: "10.0.0.5:9090",
		Kinds: []string{"sink", "map"}, Version: "1.0.0", Meta: map[string]string{"zone": "a"},
	}
	reg := d.registration(m)
	if reg.ID != "sluice-n1" || reg.Name != "sluice" || reg.Check.CheckID != "sluice-n1:ttl" || reg.Check.TTL != "3s" || reg.Check.DeregisterCriticalServiceAfter != "1m0s" {
		t.Errorf("registration: got ID %q Name %q check %+v", reg.ID, reg.Name, reg.Check)
	}
	entry := &api.ServiceEntry{
		Node:    &api.Node{Node: "host-1", Address: "10.0.0.5"},
		Service: &api.AgentService{ID: reg.ID, Service: reg.Name, Tags: reg.Tags, Address: reg.Address, Port: reg.Port, Meta: reg.Meta},
		Checks:  api.HealthChecks{{Status: api.HealthPassing}},
	}
	alive, known := members([]*api.ServiceEntry{entry})
	if want := []cluster.Member{m.Normalize()}; !reflect.DeepEqual(alive, want) {
		t.Errorf("members: got %+v, want %+v", alive, want)
	}
	if !known["n1"] {
		t.Errorf("known: got %v, want n1", known)
	}
}

func TestMembers(t *testing.T) {
	entry := func(node, id string, modify uint64, status string, meta map[string]string) *api.ServiceEntry {
		if meta == nil {
			meta = map[string]string{metaID: id}
		}
		return &api.ServiceEntry{
			Node:    &api.Node{Node: node, Address: "192.0.2.1"},
			Service: &api.AgentService{ID: "sluice-" + id, Port: 7000 + int(modify), Meta: meta, ModifyIndex: modify},
			Checks:  api.HealthChecks{{Status: api.HealthPassing}, {Status: status}},
		}
	}
	tests := []struct {
		name      string
		entries   []*api.ServiceEntry
		wantAlive []string // ID@address
		wantKnown []string
	}{
		{"passing, node address used", []*api.ServiceEntry{entry("h", "a", 1, api.HealthPassing, nil)}, []string{"a@192.0.2.1:7001"}, []string{"a"}},
		{"critical is known, not alive", []*api.ServiceEntry{entry("h", "a", 1, api.HealthCritical, nil)}, nil, []string{"a"}},
		{"warning is not alive", []*api.ServiceEntry{entry("h", "a", 1, api.HealthWarning, nil)}, nil, []string{"a"}},
		{"foreign entry ignored", []*api.ServiceEntry{entry("h", "x", 1, api.HealthPassing, map[string]string{"other": "1"})}, nil, nil},
		{"duplicate ID: newest wins", []*api.ServiceEntry{
			entry("old", "a", 1, api.HealthPassing, nil),
			entry("new", "a", 5, api.HealthPassing, nil),
		}, []string{"a@192.0.2.1:7005"}, []string{"a"}},
		{"duplicate ID: newest critical wins", []*api.ServiceEntry{
			entry("old", "a", 1, api.HealthPassing, nil),
			entry("new", "a", 5, api.HealthCritical, nil),
		}, nil, []string{"a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			alive, known := members(tc.entries)
			var got []string
			for _, m := range alive {
				got = append(got, m.ID+"@"+m.Address)
			}
			if !reflect.DeepEqual(got, tc.wantAlive) {
				t.Errorf("alive: got %v, want %v", got, tc.wantAlive)
			}
			var gotKnown []string
			for id := range known {
				gotKnown = append(gotKnown, id)
			}
			if !reflect.DeepEqual(gotKnown, tc.wantKnown) {
				t.Errorf("known: got %v, want %v", gotKnown, tc.wantKnown)
			}
		})
	}
}
