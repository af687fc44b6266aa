package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
)

// WordCountConfig sets up the keyed word count scenario.
type WordCountConfig struct {
	// Records is the number of records the source produces.
	Records int
	// Keys is the number of distinct words.
	Keys int
	// Rate limits the source (records/s); 0 means as fast as possible.
	Rate float64
	// Parallelism of the counter; 0 means 2.
	Parallelism int
	// Telemetry configures OpenTelemetry for the run; nil means off
	// (whatever the OTEL_* variables say). See TelemetryOn.
	Telemetry *node.TelemetryConfig
	// ExactlyOnce runs with checkpoints every CheckpointInterval (0: 1 s)
	// in a directory store; otherwise the run has no guarantee (what the
	// figures before checkpoints measured).
	ExactlyOnce        bool
	CheckpointInterval time.Duration
	// NoLatencies skips keeping each record's latency (long runs).
	NoLatencies bool
	// Typed runs the same pipeline written with sdk/stream (TypedWordCount)
	// instead of hand-written operators.
	Typed bool
}

// WordCount runs source → group-by counter with Pebble state → sink in one
// process and measures records/s and each record's end-to-end latency (from
// its event time at the source to the sink). The run is timed from the
// source's start (after the runtime has started) to the last record at the
// sink, so that start-up costs (opening Pebble, setting up telemetry) do not
// count against the throughput; CPU is measured over the same span.
func WordCount(cfg WordCountConfig) (Result, error) {
	if cfg.Parallelism == 0 {
		cfg.Parallelism = 2
	}
	dir, err := os.MkdirTemp("", "sluice-bench-")
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(dir)
	// Up to a million keys are made once; more are made per record (10 M
	// keys would take half a gigabyte here).
	var keys [][]byte
	if cfg.Keys <= 1_000_000 {
		keys = make([][]byte, cfg.Keys)
		for i := range keys {
			keys[i] = []byte("word-" + strconv.Itoa(i))
		}
	}
	sink := &latencySink{want: cfg.Records, done: make(chan struct{}), noLat: cfg.NoLatencies}
	if !cfg.NoLatencies {
		sink.lat = make([]time.Duration, 0, cfg.Records)
	}
	src := &wordSource{n: cfg.Records, keys: keys, nkeys: cfg.Keys, rate: cfg.Rate, valued: cfg.Typed}
	scfg := node.Config{
		NodeConfig: node.NodeConfig{NodeID: "bench", DataDir: dir, NoSync: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))},
		Telemetry:  cmp.Or(cfg.Telemetry, &node.TelemetryConfig{}),
		Guarantee:  sdk.NoGuarantee,
	}
	if cfg.ExactlyOnce {
		scfg.Guarantee, scfg.CheckpointInterval = sdk.ExactlyOnce, cfg.CheckpointInterval
		scfg.Checkpoints = filepath.Join(dir, "checkpoints")
		scfg.CheckpointsKept = 100_000 // all, for their durations
	}
	ops := []sdk.Factory{
		func() sdk.Operator { return src },
		func() sdk.Operator { return wordCounter{par: cfg.Parallelism} },
		func() sdk.Operator { return sink },
	}
	if cfg.Typed {
		if ops, err = typedWordCount(ops[0], ops[2], cfg.Parallelism); err != nil {
			return Result{}, err
		}
	}
	rt, err := node.Start(context.Background(), scfg, ops...)
	if err != nil {
		return Result{}, err
	}
	defer rt.Stop(context.Background())
	// A stuck run fails; a slow one (new keys are written at 65k records/s
	// on a quiet machine, far fewer on a loaded one) may take its time.
	limit := 10*time.Minute + time.Duration(cfg.Records/5_000)*time.Second
	select {
	case <-sink.done:
	case <-time.After(limit):
		return Result{}, fmt.Errorf("bench: word count: only %d of %d records reached the sink in %v", sink.n, cfg.Records, limit)
	}
	r := Result{Ops: int64(cfg.Records), Elapsed: time.Since(src.start), CPU: processCPU() - src.cpu, Latencies: sink.lat,
		StateBytes: dirSize(dir)}
	if cfg.ExactlyOnce {
		if r.Checkpoints, r.CheckpointPhases, err = checkpointRecords(filepath.Join(dir, "checkpoints")); err != nil {
			return Result{}, err
		}
	}
	return r, nil
}

// wordSource produces n records over keys, optionally rate-limited. It
// keeps its position in State (Resumable), so that it can run
// exactly-once.
type wordSource struct {
	n, next int
	keys    [][]byte // nil: keys made per record, of nkeys
	nkeys   int
	rate    float64
	valued  bool          // the word is the value too (what a typed pipeline reads)
	start   time.Time     // when the source started (Init)
	cpu     time.Duration // the process's CPU time then
}

func (s *wordSource) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: "source", Outputs: []string{"words"}}
}

// Init starts the clock once: a restarted incarnation (the factory returns
// the same source) keeps counting from the first start.
func (s *wordSource) Init(ctx sdk.Context) error {
	if s.start.IsZero() {
		s.start, s.cpu = time.Now(), processCPU()
	}
	v, err := ctx.State().Get(positionKey)
	switch {
	case err == nil:
		n, perr := strconv.Atoi(string(v))
		if perr != nil {
			return fmt.Errorf("bench: bad source position %q", v)
		}
		s.next = n
	case !errors.Is(err, sdk.ErrNotFound):
		return err
	}
	return nil
}

// positionKey is where wordSource keeps its position.
var positionKey = []byte("position")

// ResumesFromState implements sdk.Resumable.
func (s *wordSource) ResumesFromState() {}
func (s *wordSource) Poll(ctx sdk.Context) error {
	limit := s.n
	if s.rate > 0 {
		limit = min(limit, int(s.rate*time.Since(s.start).Seconds()))
	}
	if s.next >= limit {
		return nil
	}
	for i := 0; i < 1024 && s.next < limit; i++ {
		var key []byte
		if s.keys != nil {
			key = s.keys[s.next%len(s.keys)]
		} else {
			key = strconv.AppendInt([]byte("word-"), int64(s.next%s.nkeys), 10)
		}
		rec := sdk.Record{Key: key, EventTime: time.Now()}
		if s.valued {
			rec.Value = key
		}
		if err := ctx.Produce("words", rec); err != nil {
			return err
		}
		s.next++
	}
	ctx.State().Set(positionKey, strconv.AppendInt(nil, int64(s.next), 10))
	return nil
}
func (s *wordSource) ProcessRecord(sdk.Context, sdk.Record) error       { return nil }
func (s *wordSource) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

// wordCounter keeps a count per word in state and emits the new count.
type wordCounter struct{ par int }

func (c wordCounter) Metadata() sdk.Metadata {
	return sdk.Metadata{
		Name:        "count",
		Inputs:      []sdk.Input{{Stream: "words", Routing: sdk.GroupBy}},
		Outputs:     []string{"counts"},
		Parallelism: c.par,
	}
}
func (wordCounter) Init(sdk.Context) error { return nil }
func (wordCounter) ProcessRecord(ctx sdk.Context, rec sdk.Record) error {
	n, err := sdk.GetInt64(ctx.State(), rec.Key)
	if err != nil {
		return err
	}
	sdk.PutInt64(ctx.State(), rec.Key, n+1)
	return ctx.Produce("counts", sdk.Record{Key: rec.Key, Value: sdk.Int64Bytes(n + 1)})
}
func (wordCounter) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

// latencySink records each record's end-to-end latency (single instance).
type latencySink struct {
	lat     []time.Duration
	n, want int
	noLat   bool // count only
	done    chan struct{}
}

func (s *latencySink) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: "sink", Inputs: []sdk.Input{{Stream: "counts"}}}
}
func (s *latencySink) Init(sdk.Context) error { return nil }
func (s *latencySink) ProcessRecord(_ sdk.Context, rec sdk.Record) error {
	if !s.noLat {
		s.lat = append(s.lat, time.Since(rec.EventTime))
	}
	if s.n++; s.n == s.want {
		close(s.done)
	}
	return nil
}
func (s *latencySink) ProcessTimer(sdk.Context, string, time.Time) error { return nil }
