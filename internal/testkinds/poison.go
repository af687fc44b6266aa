package testkinds

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connectors/generate"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
)

// Picky reads Input and fails on the record whose value is Poison (a
// poison record): after one attempt it goes to the dead-letter stream,
// with the error "poison record <value>".
type Picky struct {
	Name, Input, Poison string
}

// Metadata implements sdk.Operator.
func (p Picky) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: p.Name, Inputs: []sdk.Input{{Stream: p.Input, Routing: sdk.Shuffle}},
		Restart: sdk.RestartPolicy{DeadLetterAfter: 1, InitialBackoff: time.Millisecond}}
}

// Init implements sdk.Operator.
func (Picky) Init(sdk.Context) error { return nil }

// ProcessRecord fails on the poison record.
func (p Picky) ProcessRecord(_ sdk.Context, rec sdk.Record) error {
	if string(rec.Value) == p.Poison {
		return errors.New("poison record " + p.Poison)
	}
	return nil
}

// ProcessTimer implements sdk.Operator.
func (Picky) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

// EventTimes returns a source named name producing to the stream of the
// same name records 0, 1, … (key "k", value i in decimal) with event times
// a millisecond apart from base and monotonic watermarks, 500 records/s;
// count > 0 ends it (end-of-stream) after that many.
func EventTimes(name string, base time.Time, count int64) sdk.Factory {
	return func() sdk.Operator {
		return &generate.Source{Name: name, Stream: name, Count: count, End: count > 0, Rate: 500, Batch: 16, Watermarks: &sdk.WatermarkStrategy{},
			Make: func(i int64, _ *rand.Rand) sdk.Record {
				return sdk.Record{Key: []byte("k"), Value: strconv.AppendInt(nil, i, 10), EventTime: base.Add(time.Duration(i) * time.Millisecond)}
			}}
	}
}

// PoisonBase is the event time of the first record of PoisonPipeline's
// sources.
var PoisonBase = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// StartPoisonPipeline starts a node in this process running a pipeline
// for the console's tests, with its control API on a loopback port:
// "ticks" (EventTimes from PoisonBase, endless), "picky" (Picky on ticks,
// dead-lettering the record "7") and "few" (EventTimes ending after 5
// records). The node stops when t ends.
func StartPoisonPipeline(t testing.TB) *node.Runtime {
	t.Helper()
	rt, err := node.Start(context.Background(), node.Config{NodeConfig: node.NodeConfig{DataDir: t.TempDir(), NoSync: true, Logger: sluicetest.Logger(t)},
		HTTP: "127.0.0.1:0", Deploy: []string{"ticks", "picky", "few"}, Guarantee: sdk.AtLeastOnce},
		EventTimes("ticks", PoisonBase, 0), func() sdk.Operator { return Picky{Name: "picky", Input: "ticks", Poison: "7"} }, EventTimes("few", PoisonBase, 5))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Stop(context.Background()) })
	return rt
}
