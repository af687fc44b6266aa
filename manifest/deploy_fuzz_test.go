package manifest

import (
	"encoding/json"
	"errors"
	"net/url"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/topology"
	"github.com/sluicehq/sluice/topology/topologytest"
)

// deploySeeds are manifests that connect to deployBase's streams, form
// cycles (direct, indirect, through dead letters) and rewire it.
var deploySeeds = []string{
	"name: echo\ninputs: [{stream: nums}]\noutputs: [nums]\n",
	"name: sink\ninputs: [{stream: counts, routing: group-by}]\n",
	"name: loop\ninputs: [{stream: counts}]\noutputs: [words]\n",
	"- name: a\n  inputs: [{stream: x}]\n  outputs: [y]\n- name: b\n  inputs: [{stream: y}]\n  outputs: [x]\n",
	"name: fix\ninputs: [{stream: count.deadletter}]\noutputs: [words]\n",
	"name: retry\ninputs: [{stream: retry.deadletter}]\n",
	"name: count\ninputs: [{stream: nums}]\noutputs: [counts]\ninstances: 4\n",
	"name: count\ninputs: [{stream: counts}]\noutputs: [words]\n---\nname: gen\noutputs: [nums]\n",
	`[{"name": "a", "outputs": ["words"]}, {"name": "b", "inputs": [{"stream": "counts"}], "outputs": ["nums"]}]`,
	"name: count\nkeyGroups: 64\ninstances: 65\n",
	"name: ..\n",
	"name: gen\nkind: -x\noutputs: [.]\n",
	"name: c\nrestart: {window: 1m, maxRestarts: 2}\nenvironment: {A: b}\ncpus: 1\n",
	"name: w\ninputs: [{stream: words, routing: group-by}]\nwindow: {type: hopping, size: 1m, slide: 10s, lateness: 5s, emit: on-update}\n",
	"name: count\nwindow: {size: 1s}\n",
}

// deployBase is a stored pipeline gen → words → count → counts, as a
// manifest's operators meet it.
func deployBase(t *testing.T) topology.Topology {
	t.Helper()
	var base topology.Topology
	var err error
	base, _, err = base.DeployAll([]topology.OperatorSpec{
		{Kind: "gen", Meta: core.Metadata{Name: "gen", Outputs: []string{"words"}}},
		{Kind: "count", Meta: core.Metadata{Name: "count", Inputs: []core.Input{{Stream: "words", Routing: core.GroupBy}}, Outputs: []string{"counts"}, Parallelism: 2}},
	}, time.Unix(1700000000, 0))
	if err != nil {
		t.Fatal(err)
	}
	return base
}

// specOf builds the spec the control API deploys for m, for a kind no node
// hosts (control/operators.go: specFromManifest).
func specOf(m api.Manifest) topology.OperatorSpec {
	kind := m.Kind
	if kind == "" {
		kind = m.Name
	}
	return topology.OperatorSpec{Kind: kind, Meta: Metadata(m, core.Metadata{}), Executable: m.Executable,
		CPUs: m.CPUs, Mem: m.Mem, Disk: m.Disk, Retries: m.Retries, Env: m.Environment}
}

// FuzzDeploy fuzzes manifests and the topology together: what Parse and
// Validate accept has path-safe names; its metadata is valid or fails with
// a *core.MetadataError; deployed into a stored pipeline as one change
// (DeployAll) it is either refused with a *core.MetadataError — for a
// cycle, only if the operator is on one — or gives a valid topology with
// no cycle, one version on, that survives a JSON round trip; deployed one
// by one, it ends in the same operators whenever every step is accepted.
func FuzzDeploy(f *testing.F) {
	for _, s := range append(deploySeeds, fuzzSeeds...) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, err := Parse(data)
		if err != nil {
			return // FuzzParse checks the errors
		}
		base := deployBase(t)
		now := time.Unix(1700000100, 0)
		var specs []topology.OperatorSpec
		names := map[string]bool{}
		for _, m := range ms {
			if Validate(m) != nil {
				return
			}
			for _, n := range manifestNames(m) {
				if p := pathProblem(n); p != "" {
					t.Fatalf("Validate accepted the name %q, which %s", n, p)
				}
			}
			s := specOf(m)
			if err := s.Meta.Validate(); err != nil {
				var me *core.MetadataError
				if !errors.As(err, &me) {
					t.Fatalf("metadata of %+v: %v, want a *core.MetadataError", m, err)
				}
				if w := m.Window; w != nil && w.Type != "" && strings.HasPrefix(me.Field, "window") {
					t.Fatalf("Validate accepted the window %+v, whose metadata is refused: %v", *w, err)
				}
				return // depends on the kind: instances beyond the default key groups
			}
			if names[m.Name] {
				return // DeployAll refuses it; checked in topology
			}
			names[m.Name] = true
			specs = append(specs, s)
		}

		all, created, allErr := base.DeployAll(specs, now)
		if err := allErr; err != nil {
			var me *core.MetadataError
			if !errors.As(err, &me) {
				t.Fatalf("DeployAll: %v, want a *core.MetadataError", err)
			}
			var ce *topology.CycleError
			if errors.As(err, &ce) {
				unchecked := base.Clone()
				for _, s := range specs {
					unchecked = replaceOp(unchecked, s)
				}
				if !topologytest.OperatorsOnCycles(unchecked)[ce.Operator] {
					t.Fatalf("refused %s for the cycle %s, which the oracle does not see", ce.Operator, ce.Cycle)
				}
				if err := topologytest.CheckCycles(unchecked); err != nil {
					t.Fatal(err)
				}
			}
			if all.Version != base.Version {
				t.Fatalf("a refused change returned version %d, want %d", all.Version, base.Version)
			}
		} else {
			checkDeployed(t, base, all, specs, created)
		}

		// One by one: if every step is accepted, the end is DeployAll's.
		seq := base
		for _, s := range specs {
			if seq, _, err = seq.Deploy(s, now); err != nil {
				return
			}
		}
		if allErr != nil {
			t.Fatalf("deploying one by one was accepted, as one change refused: %v", allErr)
		}
		a, _ := json.Marshal(all.Operators)
		b, _ := json.Marshal(seq.Operators)
		if string(a) != string(b) {
			t.Fatalf("one by one:\n%s\nas one change:\n%s", b, a)
		}
	})
}

// checkDeployed checks a topology DeployAll accepted.
func checkDeployed(t *testing.T, base, all topology.Topology, specs []topology.OperatorSpec, created []bool) {
	t.Helper()
	if len(specs) > 0 && all.Version != base.Version+1 {
		t.Fatalf("version %d after one change on %d", all.Version, base.Version)
	}
	if len(created) != len(specs) {
		t.Fatalf("created %v for %d specs", created, len(specs))
	}
	if err := all.Validate(); err != nil {
		t.Fatalf("DeployAll stored an invalid topology: %v", err)
	}
	if cs := all.Cycles(); len(cs) != 0 {
		t.Fatalf("DeployAll stored cycles: %v", cs)
	}
	if err := topologytest.CheckCycles(all); err != nil {
		t.Fatal(err)
	}
	for i, s := range specs {
		got, ok := all.Find(s.Meta.Name)
		if !ok {
			t.Fatalf("%s not deployed", s.Meta.Name)
		}
		_, was := base.Find(s.Meta.Name)
		if created[i] == was {
			t.Fatalf("%s: created=%v, deployed before=%v", s.Meta.Name, created[i], was)
		}
		if created[i] && got.Revision != 0 {
			t.Fatalf("new operator %s at revision %d", s.Meta.Name, got.Revision)
		}
	}
	b, err := json.Marshal(all)
	if err != nil {
		t.Fatal(err)
	}
	var back topology.Topology
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if again, _ := json.Marshal(back); string(again) != string(b) {
		t.Fatalf("JSON round trip:\n%s\n%s", b, again)
	}
}

// manifestNames returns every name in m: its own, its kind's, its streams'.
func manifestNames(m api.Manifest) []string {
	out := []string{m.Name}
	if m.Kind != "" {
		out = append(out, m.Kind)
	}
	for _, in := range m.Inputs {
		out = append(out, in.Stream)
	}
	return append(out, m.Outputs...)
}

// pathProblem says why name is unsafe as a URL path segment, a file name
// or a command-line argument, or returns "".
func pathProblem(name string) string {
	switch {
	case url.PathEscape(name) != name:
		return "needs escaping in a URL path"
	case path.Clean("/v1/operators/"+name) != "/v1/operators/"+name:
		return "is changed by URL path cleaning"
	case filepath.Base(filepath.Join("launched", name)) != name:
		return "is not a file name of its own"
	case strings.HasPrefix(name, "-") || strings.HasPrefix(name, "."):
		return "looks like a flag or a hidden file"
	}
	return ""
}

// replaceOp adds s to t, or replaces the operator of its name, unchecked.
func replaceOp(t topology.Topology, s topology.OperatorSpec) topology.Topology {
	s.Meta = s.Meta.WithDefaults()
	for i, o := range t.Operators {
		if o.Meta.Name == s.Meta.Name {
			t.Operators[i] = s
			return t
		}
	}
	t.Operators = append(t.Operators, s)
	return t
}
