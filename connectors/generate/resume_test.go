package generate_test

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connectors/generate"
	"github.com/sluicehq/sluice/sdk"
)

// callCtx is an sdk.Context for calling a source's methods directly, as
// the runtime does: it keeps produced records and state in memory, and
// fails Produce once failAt records were produced (if failAt > 0).
type callCtx struct {
	context.Context
	info     sdk.InstanceInfo
	state    mapState
	produced []string
	failAt   int
}

func newCtx(index, par int, state mapState) *callCtx {
	return &callCtx{Context: context.Background(), state: state,
		info: sdk.InstanceInfo{Operator: "gen", Index: index, Parallelism: par, KeyGroups: par, FirstGroup: index, EndGroup: index + 1, Guarantee: sdk.ExactlyOnce}}
}

func (c *callCtx) Produce(_ string, rec sdk.Record) error {
	if c.failAt > 0 && len(c.produced) == c.failAt {
		return errors.New("downstream refused")
	}
	c.produced = append(c.produced, string(rec.Value))
	return nil
}
func (c *callCtx) SetTimer(string, time.Time) error { return nil }
func (c *callCtx) DeleteTimer(string) error         { return nil }
func (c *callCtx) State() sdk.State                 { return c.state }
func (c *callCtx) Instance() sdk.InstanceInfo       { return c.info }
func (c *callCtx) Logger() *slog.Logger             { return slog.New(slog.DiscardHandler) }

// The event-time half of sdk.Context: a source here sets no event timers.
func (c *callCtx) SetEventTimer(string, time.Time) error { return nil }
func (c *callCtx) DeleteEventTimer(string) error         { return nil }
func (c *callCtx) Watermark() time.Time                  { return time.Time{} }

// mapState is the state of an instance with one key group.
type mapState map[string][]byte

func (m mapState) Get(k []byte) ([]byte, error) {
	if v, ok := m[string(k)]; ok {
		return v, nil
	}
	return nil, sdk.ErrNotFound
}
func (m mapState) Set(k, v []byte) { m[string(k)] = slices.Clone(v) }
func (m mapState) Delete(k []byte) { delete(m, string(k)) }
func (m mapState) Scan(prefix []byte, fn func(k, v []byte) error) error {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if len(k) >= len(prefix) && k[:len(prefix)] == string(prefix) {
			if err := fn([]byte(k), m[k]); err != nil {
				return err
			}
		}
	}
	return nil
}

func newSource(par int) *generate.Source {
	return &generate.Source{Name: "gen", Stream: "out", Batch: 10, Parallelism: par,
		Make: func(i int64, _ *rand.Rand) sdk.Record { return sdk.Record{Value: []byte(strconv.FormatInt(i, 10))} }}
}

func TestResumesFromTheRestoredCheckpoint(t *testing.T) {
	var _ sdk.Resumable = newSource(1)
	c := newCtx(1, 3, mapState{})
	src := newSource(3)
	if err := src.Init(c); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := src.Poll(c); err != nil {
			t.Fatal(err)
		}
	}
	checkpoint := maps.Clone(c.state)
	for range 2 {
		if err := src.Poll(c); err != nil {
			t.Fatal(err)
		}
	}
	after := c.produced[30:]
	r := newCtx(1, 3, maps.Clone(checkpoint))
	restored := newSource(3)
	if err := restored.Init(r); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := restored.Poll(r); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(r.produced, after) {
		t.Fatalf("after the restore produced %v, want what followed the checkpoint: %v", r.produced, after)
	}
	if after[0] != "91" { // instance 1 of 3: 1, 4, 7, …; the 31st is 91
		t.Fatalf("record 31 of instance 1 is %s, want 91", after[0])
	}
}

func TestAFailedPollKeepsThePosition(t *testing.T) {
	c := newCtx(0, 1, mapState{})
	src := newSource(1)
	if err := src.Init(c); err != nil {
		t.Fatal(err)
	}
	if err := src.Poll(c); err != nil {
		t.Fatal(err)
	}
	c.failAt = 15 // the second Poll fails after 5 records
	if err := src.Poll(c); err == nil {
		t.Fatal("Poll succeeded though Produce failed")
	}
	if got := string(c.state["generate/next"]); got != "10" {
		t.Fatalf("position after a failed Poll is %s, want 10 (the runtime discards the attempt's records)", got)
	}
	// The runtime discards the failed attempt's records and polls again.
	c.produced, c.failAt = c.produced[:10], 0
	if err := src.Poll(c); err != nil {
		t.Fatal(err)
	}
	if want := []string{"10", "11"}; !slices.Equal(c.produced[10:12], want) {
		t.Fatalf("the Poll after a failed one produced %v…, want %v…", c.produced[10:12], want)
	}
}
