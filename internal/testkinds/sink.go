package testkinds

import (
	"time"

	"github.com/sluicehq/sluice/sdk"
)

// Sink is a group-by sink on the "counts" stream (a counter with Emit
// set): the third operator of a gen → count → sink pipeline, for the
// telemetry tests. It keeps nothing.
type Sink struct{ Parallelism int }

// SinkFactory returns a factory of Sink.
func SinkFactory(parallelism int) sdk.Factory {
	return func() sdk.Operator { return Sink{Parallelism: parallelism} }
}

// Metadata implements sdk.Operator.
func (s Sink) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: "sink", Inputs: []sdk.Input{{Stream: Counts, Routing: sdk.GroupBy}}, Parallelism: s.Parallelism}
}

// Init implements sdk.Operator.
func (Sink) Init(sdk.Context) error { return nil }

// ProcessRecord implements sdk.Operator; it drops the record.
func (Sink) ProcessRecord(sdk.Context, sdk.Record) error { return nil }

// ProcessTimer implements sdk.Operator.
func (Sink) ProcessTimer(sdk.Context, string, time.Time) error { return nil }
