package control_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/internal/testkinds"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
)

// tailSource is a source that keeps its position in a field.
type tailSource struct{}

func (tailSource) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: "tail", Outputs: []string{"words"}}
}
func (tailSource) Init(sdk.Context) error                            { return nil }
func (tailSource) ProcessRecord(sdk.Context, sdk.Record) error       { return nil }
func (tailSource) ProcessTimer(sdk.Context, string, time.Time) error { return nil }
func (tailSource) Poll(sdk.Context) error                            { return nil }

// A manifest for an operator that cannot take part in exactly-once is
// refused at deploy with the reason next to the kind field; the topology
// does not change.
func TestDeployRefusesASourceThatCannotResume(t *testing.T) {
	rt, err := node.Start(context.Background(), node.Config{NodeConfig: node.NodeConfig{DataDir: t.TempDir(), NoSync: true, Logger: sluicetest.Logger(t)}, HTTP: "127.0.0.1:0", Deploy: []string{"count"}},
		func() sdk.Operator { return tailSource{} }, testkinds.CounterFactory(2, false))
	sluicetest.Must(t, err)
	t.Cleanup(func() { _ = rt.Stop(context.Background()) })
	a := client{t: t, base: "http://" + rt.HTTPAddr()}

	var e api.Error
	code := a.do("POST", "/v1/operators", api.DeployRequest{Manifest: api.Manifest{Name: "tail-1", Kind: "tail"}}, &e)
	if code != 400 || len(e.Fields) != 1 || !strings.HasPrefix(e.Fields[0], `kind: operator "tail-1" cannot run exactly-once`) || !strings.Contains(e.Fields[0], "Resumable") {
		t.Fatalf("deploy of a non-resumable source under exactly-once = %d %+v, want 400 with the reason on kind", code, e)
	}
	code = a.do("POST", "/v1/deployments", api.DeploymentRequest{Manifests: []api.Manifest{{Name: "tail-2", Kind: "tail"}}}, &e)
	if code != 400 || !strings.Contains(strings.Join(e.Fields, ";"), "Resumable") {
		t.Fatalf("deployment of a non-resumable source under exactly-once = %d %+v, want 400", code, e)
	}
	var ops []api.OperatorView
	if code := a.do("GET", "/v1/operators", nil, &ops); code != 200 || len(ops) != 1 {
		t.Fatalf("operators after refused deploys = %d %+v, want only count", code, ops)
	}
}
