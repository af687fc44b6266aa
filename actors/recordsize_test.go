package actors_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/actors"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/sdk"
	tpebble "github.com/sluicehq/sluice/topology/pebble"
)

// inflate produces, for each record, a record whose value has as many
// bytes as the input's value says, and reports what Produce returned.
type inflate struct{ errs chan error }

func (inflate) Metadata() core.Metadata {
	return core.Metadata{Name: "inflate", Inputs: []core.Input{{Stream: "in"}}, Outputs: []string{"out"}}
}
func (inflate) Init(core.Context) error { return nil }
func (f inflate) ProcessRecord(ctx core.Context, rec core.Record) error {
	n, err := strconv.Atoi(string(rec.Value))
	if err != nil {
		return err
	}
	f.errs <- ctx.Produce("out", core.Record{Key: []byte("k"), Value: make([]byte, n-1)}) // key and value: n bytes
	return nil
}
func (inflate) ProcessTimer(core.Context, string, time.Time) error { return nil }

// A record larger than MaxRecordBytes (key, value and headers) is refused
// by Produce, from outside and from an operator, with ErrRecordTooLarge
// and the sizes; one of exactly the limit goes through.
func TestRecordsOverMaxRecordBytesAreRefused(t *testing.T) {
	errs := make(chan error, 1)
	out := &sluicetest.Collector{}
	n, err := actors.Start(context.Background(), actors.Config{LocalStore: tpebble.Local, DataDir: t.TempDir(), MaxRecordBytes: 1000},
		func() core.Operator { return inflate{errs} },
		func() core.Operator {
			return &sluicetest.Sink{Name: "sink", Inputs: []core.Input{{Stream: "out"}}, Into: out}
		})
	sluicetest.Must(t, err)
	defer stop(t, n)

	big := core.Record{Key: []byte("k"), Value: []byte("1"), Headers: []core.Header{{Key: "h", Value: strings.Repeat("x", 998)}}}
	if err := n.Produce(context.Background(), "in", big); !errors.Is(err, sdk.ErrRecordTooLarge) || !strings.Contains(err.Error(), "1001 bytes") {
		t.Fatalf("Produce of 1001 bytes: %v, want ErrRecordTooLarge with the size", err)
	}
	sluicetest.Must(t, n.Produce(context.Background(), "in", core.Record{Value: []byte("1001")}))
	if err := <-errs; !errors.Is(err, sdk.ErrRecordTooLarge) || !strings.Contains(err.Error(), `"inflate"`) || !strings.Contains(err.Error(), `"out"`) {
		t.Fatalf("operator Produce of 1001 bytes: %v, want ErrRecordTooLarge naming the operator and the stream", err)
	}
	sluicetest.Must(t, n.Produce(context.Background(), "in", core.Record{Value: []byte("1000")}))
	if err := <-errs; err != nil {
		t.Fatalf("operator Produce of 1000 bytes: %v, want it taken", err)
	}
	sluicetest.WaitFor(t, 10*time.Second, "the 1000-byte record at the sink", func() bool { return out.Len() == 1 })
	if d := out.All()[0]; len(d.Record.Value) != 999 {
		t.Fatalf("sink got a value of %d bytes, want 999", len(d.Record.Value))
	}
}

// Config.Validate refuses negative byte limits.
func TestByteLimitsValidated(t *testing.T) {
	err := actors.Config{BatchBytes: -1, MaxRecordBytes: -1}.Validate()
	if err == nil || !strings.Contains(err.Error(), "Config.BatchBytes") || !strings.Contains(err.Error(), "Config.MaxRecordBytes") {
		t.Fatalf("Validate: %v, want both fields named", err)
	}
}
