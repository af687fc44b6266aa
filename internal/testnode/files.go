package main

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/connectors/file"
	"github.com/sluicehq/sluice/internal/testkinds"
	"github.com/sluicehq/sluice/sdk"
)

// fileOps returns the file pipeline: a source "gen" reading in (one record
// per line, keyed by the line) at most rate lines/s, the counter emitting
// decimal counts (counter, its other settings as given), and a sink
// "sink" writing "key\tcount" lines to out.
func fileOps(in, out string, rate float64, counter testkinds.Counter) ([]sdk.Factory, error) {
	src, err := file.NewSource(file.SourceConfig{Name: "gen", Stream: testkinds.Words, Path: in, Batch: 100,
		Follow: true, Key: func(line []byte) []byte { return line }}) // a node runs on at the end of its input
	if err != nil {
		return nil, fmt.Errorf("-file-in: %w", err)
	}
	sink, err := file.NewSink(file.SinkConfig{Name: "sink", Stream: testkinds.Counts, Routing: sdk.GroupBy, Path: out,
		Format: file.FormatKeyValue, Parallelism: 2})
	if err != nil {
		return nil, fmt.Errorf("-file-out: %w", err)
	}
	gen := src
	if rate > 0 {
		every := time.Duration(float64(100*time.Second) / rate) // one Poll of up to 100 lines
		gen = func() sdk.Operator { return &paced{Source: src().(*file.Source), every: every} }
	}
	counter.Emit, counter.Decimal = true, true
	return []sdk.Factory{gen, func() sdk.Operator { return counter }, sink}, nil
}

// paced is a file source that polls at most once per every, so that a
// test's crashes land while the file is being read.
type paced struct {
	*file.Source
	every time.Duration
	last  time.Time
}

// Poll reads the next batch of lines once every has passed since the last.
func (p *paced) Poll(ctx sdk.Context) error {
	if time.Since(p.last) < p.every {
		return nil
	}
	p.last = time.Now()
	return p.Source.Poll(ctx)
}
