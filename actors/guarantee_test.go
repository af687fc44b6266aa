package actors_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/actors"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/internal/sluicetest"
	tpebble "github.com/sluicehq/sluice/topology/pebble"
)

// plainSource is a source that keeps its position in a field: it cannot
// resume from a checkpoint.
type plainSource struct{ n int }

func (*plainSource) Metadata() core.Metadata {
	return core.Metadata{Name: "plain", Outputs: []string{"words"}}
}
func (*plainSource) Init(core.Context) error                            { return nil }
func (*plainSource) ProcessRecord(core.Context, core.Record) error      { return nil }
func (*plainSource) ProcessTimer(core.Context, string, time.Time) error { return nil }
func (s *plainSource) Poll(core.Context) error                          { s.n++; return nil }

// bufferSink buffers output outside the runtime without two-phase commit.
type bufferSink struct{}

func (bufferSink) Metadata() core.Metadata {
	return core.Metadata{Name: "buffer", Inputs: []core.Input{{Stream: "words"}}}
}
func (bufferSink) Init(core.Context) error                            { return nil }
func (bufferSink) ProcessRecord(core.Context, core.Record) error      { return nil }
func (bufferSink) ProcessTimer(core.Context, string, time.Time) error { return nil }
func (bufferSink) Flush(core.Context) error                           { return nil }

// Under exactly-once a node refuses, before it deploys anything, a source
// that cannot resume from a checkpoint and a sink that cannot take part in
// two-phase commit, saying which and why; the weaker guarantees run them.
func TestExactlyOnceRefusesOperatorsThatCannotTakePart(t *testing.T) {
	for _, tc := range []struct {
		f    core.Factory
		name string
		want string
	}{
		{func() core.Operator { return &plainSource{} }, "plain", "sdk.Resumable"},
		{func() core.Operator { return bufferSink{} }, "buffer", "sdk.Committer"},
	} {
		_, err := actors.Start(context.Background(), actors.Config{LocalStore: tpebble.Local, NodeID: "n1", DataDir: t.TempDir(), NoSync: true, Logger: sluicetest.Logger(t),
			Checkpoints: &actors.CheckpointConfig{Store: checkpointStore(t)}}, tc.f)
		var ge *core.GuaranteeError
		if !errors.As(err, &ge) || ge.Operator != tc.name || ge.Guarantee != core.ExactlyOnce || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("start with %s under exactly-once: %v, want a GuaranteeError naming it and %s", tc.name, err, tc.want)
		}
		t.Logf("refused: %v", err)
		n, err := actors.Start(context.Background(), actors.Config{LocalStore: tpebble.Local, NodeID: "n1", DataDir: t.TempDir(), NoSync: true, Logger: sluicetest.Logger(t),
			AtLeastOnce: true}, tc.f)
		sluicetest.Must(t, err)
		stop(t, n)
	}
}
