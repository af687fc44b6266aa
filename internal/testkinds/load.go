package testkinds

import (
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/connectors/generate"
	"github.com/sluicehq/sluice/sdk"
)

// Worked is the stream a Worker writes.
const Worked = "worked"

// Pace is a rate the test or benchmark changes while a PacedGen runs
// (records/s, read at every Poll). Safe for concurrent use.
type Pace struct{ bits atomic.Uint64 }

// Set changes the rate.
func (p *Pace) Set(rate float64) { p.bits.Store(uint64(rate * 1000)) }

// Rate returns the rate.
func (p *Pace) Rate() float64 { return float64(p.bits.Load()) / 1000 }

// PacedGen returns a generator ("gen", one instance) of records i with
// keys Key(i, keys) at the rate pace says, endless.
func PacedGen(keys int, pace *Pace) sdk.Factory {
	return func() sdk.Operator {
		return &generate.Source{Name: "gen", Stream: Words, Pace: pace.Rate, Parallelism: 1, Batch: 64,
			Make: func(i int64, _ *rand.Rand) sdk.Record {
				return sdk.Record{Key: []byte(Key(i, keys)), Value: strconv.AppendInt(nil, i, 10)}
			}}
	}
}

// Worker ("work") counts Words records per key (group-by) like Counter,
// spending Cost on each (waiting, not computing: it stands for a call
// to another service, so its true rate does not depend on the free
// CPU), and forwards each record to Worked. With Autoscale set the
// autoscaler sizes it.
type Worker struct {
	Parallelism int
	Cost        time.Duration
	Autoscale   *sdk.AutoscaleSpec
}

// Metadata implements sdk.Operator.
func (w Worker) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: "work", Inputs: []sdk.Input{{Stream: Words, Routing: sdk.GroupBy}}, Outputs: []string{Worked},
		Parallelism: w.Parallelism, Autoscale: w.Autoscale}
}

// Init implements sdk.Operator.
func (Worker) Init(sdk.Context) error { return nil }

// ProcessRecord waits Cost, adds one to the key's count and forwards rec.
func (w Worker) ProcessRecord(ctx sdk.Context, rec sdk.Record) error {
	time.Sleep(w.Cost) // the record's cost (see Worker), not a synchronisation
	n, err := sdk.GetInt64(ctx.State(), rec.Key)
	if err != nil {
		return err
	}
	sdk.PutInt64(ctx.State(), rec.Key, n+1)
	return ctx.Produce(Worked, rec)
}

// ProcessTimer implements sdk.Operator.
func (Worker) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

// Tally ("sink", one instance) counts Worked records per key in its
// state and notes when each arrives in Arrivals.
type Tally struct{ Arrivals *Arrivals }

// Metadata implements sdk.Operator.
func (Tally) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: "sink", Inputs: []sdk.Input{{Stream: Worked, Routing: sdk.GroupBy}}, Parallelism: 1}
}

// Init implements sdk.Operator.
func (Tally) Init(sdk.Context) error { return nil }

// ProcessRecord adds one to the key's count.
func (t Tally) ProcessRecord(ctx sdk.Context, rec sdk.Record) error {
	t.Arrivals.note(time.Now())
	n, err := sdk.GetInt64(ctx.State(), rec.Key)
	if err != nil {
		return err
	}
	sdk.PutInt64(ctx.State(), rec.Key, n+1)
	return nil
}

// ProcessTimer implements sdk.Operator.
func (Tally) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

// Arrivals keeps when records reached a Tally: their count and the gaps
// between two of them longer than gapMin. Safe for concurrent use.
type Arrivals struct {
	mu    sync.Mutex
	last  time.Time
	count int64
	gaps  []Gap
}

// Gap is a time without arrivals, ended by the record that arrived at End.
type Gap struct {
	End time.Time
	Len time.Duration
}

// gapMin is the shortest gap Arrivals keeps.
const gapMin = 20 * time.Millisecond

func (a *Arrivals) note(now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.last.IsZero() && now.Sub(a.last) >= gapMin {
		a.gaps = append(a.gaps, Gap{End: now, Len: now.Sub(a.last)})
	}
	a.last = now
	a.count++
}

// Count returns the records that arrived (replays after a rollback
// included).
func (a *Arrivals) Count() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.count
}

// MaxGap returns the longest gap that overlaps [from, to] (0 if none).
func (a *Arrivals) MaxGap(from, to time.Time) time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	var m time.Duration
	for _, g := range a.gaps {
		if !g.End.Before(from) && !g.End.Add(-g.Len).After(to) {
			m = max(m, g.Len)
		}
	}
	return m
}

// Change is a parallelism change an Observer saw.
type Change struct {
	At       time.Time
	From, To int
}

// Observer samples one operator's parallelism in a topology every
// millisecond or so and keeps its changes. Its goroutine runs from
// Observe until Stop.
type Observer struct {
	mu      sync.Mutex
	current int
	changes []Change
	stop    chan struct{}
	done    chan struct{}
}

// Observe starts watching op's parallelism as parallelism reports it (0:
// not deployed).
func Observe(parallelism func() int) *Observer {
	o := &Observer{current: parallelism(), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(o.done)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-o.stop:
				return
			case <-t.C:
			}
			if p := parallelism(); p != 0 {
				o.mu.Lock()
				if p != o.current {
					o.changes = append(o.changes, Change{At: time.Now(), From: o.current, To: p})
					o.current = p
				}
				o.mu.Unlock()
			}
		}
	}()
	return o
}

// Current returns the parallelism last seen.
func (o *Observer) Current() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.current
}

// Changes returns the changes seen so far.
func (o *Observer) Changes() []Change {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]Change(nil), o.changes...)
}

// Stop ends the watch and waits for its goroutine; safe twice.
func (o *Observer) Stop() {
	select {
	case <-o.stop:
	default:
		close(o.stop)
	}
	<-o.done
}
