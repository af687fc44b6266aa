package control_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/internal/testkinds"
	"github.com/sluicehq/sluice/sdk/node"
)

// TestDeployContradictingItsKindIsRefused: a manifest of a hosted kind
// that leaves out an output the kind's code produces to, or reads a
// grouped input of a keyed kind another way, is refused naming the field
// (such a deploy processed 7.4 M records and produced none, silently);
// renaming the input stream and adding outputs are fine.
func TestDeployContradictingItsKindIsRefused(t *testing.T) {
	rt, err := node.Start(context.Background(), node.Config{
		NodeConfig: node.NodeConfig{DataDir: t.TempDir(), NoSync: true, Logger: sluicetest.Logger(t)}, HTTP: "127.0.0.1:0",
		Deploy: []string{}}, testkinds.CounterFactory(2, true))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Stop(context.Background()) })
	c := caller{t: t, base: "http://" + rt.HTTPAddr()}
	for _, tc := range []struct {
		name string
		mf   api.Manifest
		want string // in the error; "" for a deploy that goes through
	}{
		{"renamed output", api.Manifest{Name: "c1", Kind: "count", Outputs: []string{"totals"}}, `outputs: kind "count" produces to "counts"`},
		{"shuffled keyed input", api.Manifest{Name: "c2", Kind: "count", Inputs: []api.ManifestInput{{Stream: "words", Routing: "shuffle"}}},
			`inputs[0].routing: kind "count" reads "words" grouped by key`},
		{"no grouped input among two", api.Manifest{Name: "c3", Kind: "count", Inputs: []api.ManifestInput{{Stream: "a"}, {Stream: "b", Routing: "broadcast"}}},
			`no input of the manifest is group-by`},
		{"renamed input, one more output", api.Manifest{Name: "c4", Kind: "count", Inputs: []api.ManifestInput{{Stream: "lines", Routing: "group-by"}},
			Outputs: []string{"counts", "audit"}}, ""},
	} {
		var e api.Error
		code := c.do("POST", "/v1/operators", api.DeployRequest{Manifest: tc.mf}, &e)
		switch {
		case tc.want == "" && code != http.StatusCreated:
			t.Errorf("%s: %d %s, want 201", tc.name, code, e.Error)
		case tc.want != "" && (code != http.StatusBadRequest || !strings.Contains(strings.Join(e.Fields, "\n"), tc.want)):
			t.Errorf("%s: %d %q %q, want 400 with the field %q", tc.name, code, e.Error, e.Fields, tc.want)
		}
	}
}
