package stream_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/codec"
	"github.com/sluicehq/sluice/sdk/node"
)

// shape describes an operator's name and streams:
// "name(in/routing,… → out,…)".
func shape(m sdk.Metadata) string {
	var ins []string
	for _, in := range m.Inputs {
		ins = append(ins, in.Stream+"/"+in.Routing.String())
	}
	return m.Name + "(" + strings.Join(ins, ",") + " → " + strings.Join(m.Outputs, ",") + ")"
}

// shapes returns the shape of every operator of fs, in order.
func shapes(fs []sdk.Factory) []string {
	var s []string
	for _, f := range fs {
		s = append(s, shape(f().Metadata().WithDefaults()))
	}
	return s
}

// source produces the int64s 0..n-1 (codec.Int64) to its first output,
// one per Poll, then ends; its position is in State.
type source struct {
	outs []string
	n    int64
}

func (s *source) Metadata() sdk.Metadata {
	name := "numbers"
	if len(s.outs) != 1 {
		name = "multi"
	}
	return sdk.Metadata{Name: name, Outputs: s.outs}
}
func (*source) Init(sdk.Context) error                            { return nil }
func (*source) ProcessRecord(sdk.Context, sdk.Record) error       { return nil }
func (*source) ProcessTimer(sdk.Context, string, time.Time) error { return nil }
func (s *source) Poll(ctx sdk.Context) error {
	pos, err := sdk.GetInt64(ctx.State(), []byte("pos"))
	if err != nil {
		return err
	}
	if pos == s.n {
		return sdk.ErrEndOfStream
	}
	v, _ := codec.Int64().Encode(nil, pos)
	sdk.PutInt64(ctx.State(), []byte("pos"), pos+1)
	return ctx.Produce(s.outs[0], sdk.Record{Value: v})
}

// sink reads stream in and keeps nothing (a test reads its input stream).
type sink struct{ in string }

func (s *sink) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: "sink-" + s.in, Inputs: []sdk.Input{{Stream: s.in}}}
}
func (*sink) Init(sdk.Context) error                            { return nil }
func (*sink) ProcessRecord(sdk.Context, sdk.Record) error       { return nil }
func (*sink) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

// start runs fs in an embedded runtime, stopped when the test ends, and
// returns it with a context that ends after a minute.
func start(t *testing.T, fs []sdk.Factory) (context.Context, *node.Runtime) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	rt, err := node.Start(ctx, node.Config{NodeConfig: node.NodeConfig{DataDir: t.TempDir(), NoSync: true, Logger: sluicetest.Logger(t)}}, fs...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Stop(context.Background()) })
	return ctx, rt
}
