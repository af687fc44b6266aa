package cluster_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/cluster"
)

func TestValidate(t *testing.T) {
	ok := cluster.Member{ID: "node-1.a_b", Address: "10.0.0.5:8090", HTTPAddr: "[::1]:9090", Kinds: []string{"source.kafka"}, Version: "1.2.3", Meta: map[string]string{"zone": "eu-1"}}
	with := func(f func(*cluster.Member)) cluster.Member {
		m := ok.Normalize()
		f(&m)
		return m
	}
	tests := []struct {
		name    string
		m       cluster.Member
		wantErr string // substring; "" means valid
	}{
		{"valid", ok, ""},
		{"minimal", cluster.Member{ID: "n", Address: "h:1"}, ""},
		{"empty ID", with(func(m *cluster.Member) { m.ID = "" }), "ID"},
		{"long ID", with(func(m *cluster.Member) { m.ID = strings.Repeat("x", cluster.MaxIDLen+1) }), "ID"},
		{"ID with space", with(func(m *cluster.Member) { m.ID = "a b" }), "ID"},
		{"no port", with(func(m *cluster.Member) { m.Address = "10.0.0.5" }), "Address"},
		{"empty host", with(func(m *cluster.Member) { m.Address = ":8090" }), "Address"},
		{"port 0", with(func(m *cluster.Member) { m.Address = "h:0" }), "Address"},
		{"bad HTTPAddr", with(func(m *cluster.Member) { m.HTTPAddr = "h" }), "HTTPAddr"},
		{"empty kind", with(func(m *cluster.Member) { m.Kinds = []string{""} }), "kind"},
		{"kind with comma", with(func(m *cluster.Member) { m.Kinds = []string{"a,b"} }), "kind"},
		{"version with space", with(func(m *cluster.Member) { m.Version = "1 2" }), "Version"},
		{"meta key charset", with(func(m *cluster.Member) { m.Meta = map[string]string{"a.b": "x"} }), "Meta key"},
		{"reserved meta key", with(func(m *cluster.Member) { m.Meta = map[string]string{"sluice_id": "x"} }), "reserved"},
		{"consul meta key", with(func(m *cluster.Member) { m.Meta = map[string]string{"consul-x": "x"} }), "reserved"},
		{"long meta value", with(func(m *cluster.Member) {
			m.Meta = map[string]string{"k": strings.Repeat("v", cluster.MaxMetaValueLen+1)}
		}), "Meta[\"k\"]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.m.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("got %v, want nil", err)
			case tc.wantErr != "" && (!errors.Is(err, cluster.ErrInvalidMember) || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("got %v, want an ErrInvalidMember naming %q", err, tc.wantErr)
			}
		})
	}
}

func TestNormalize(t *testing.T) {
	in := cluster.Member{ID: "n", Kinds: []string{"b", "a", "b"}, Meta: map[string]string{}}
	got := in.Normalize()
	want := cluster.Member{ID: "n", Kinds: []string{"a", "b"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if in.Kinds[0] != "b" {
		t.Errorf("Normalize modified its receiver: Kinds %v", in.Kinds)
	}
	m := cluster.Member{ID: "n", Meta: map[string]string{"k": "v"}}
	c := m.Normalize()
	c.Meta["k"] = "changed"
	if m.Meta["k"] != "v" {
		t.Errorf("Normalize shares Meta with its receiver")
	}
}
