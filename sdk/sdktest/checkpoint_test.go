package sdktest_test

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/sdktest"
)

// txnSink is a two-phase-commit sink over an in-memory "external system"
// (ext): records go to an open transaction, PreCommit prepares it under
// the checkpoint's id and lists it in State, Commit makes every listed one
// up to the checkpoint visible, Init aborts prepared ones State does not
// list. Every call is logged in ext.calls.
type txnSink struct {
	ext     *external
	par     int
	open    []string
	failPre bool
}

type external struct {
	calls     []string
	prepared  map[string][]string // by state key, txn/<first group>/<id>
	committed []string
}

func newExternal() *external { return &external{prepared: map[string][]string{}} }

// txnKey is the state key listing a transaction, and its name in ext.
func txnKey(ctx sdk.Context, id uint64) string {
	return fmt.Sprintf("txn/%d/%d", ctx.Instance().FirstGroup, id)
}

// txnID parses txnKey's id.
func txnID(k []byte) uint64 {
	n, _ := strconv.ParseUint(string(k[strings.LastIndexByte(string(k), '/')+1:]), 10, 64)
	return n
}

func (s *txnSink) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: "sink", Inputs: []sdk.Input{{Stream: "in"}}, Parallelism: max(s.par, 1), KeyGroups: 4}
}

func (s *txnSink) Init(ctx sdk.Context) error {
	listed := map[string]bool{}
	err := sdk.ScanAllGroups(ctx.State(), []byte("txn/"), func(k, _ []byte) error {
		listed[string(k)] = true
		return nil
	})
	if err != nil {
		return err
	}
	for id := range s.ext.prepared {
		if !listed[id] {
			delete(s.ext.prepared, id)
		}
	}
	s.ext.calls = append(s.ext.calls, fmt.Sprintf("init(group %d)", ctx.Instance().FirstGroup))
	return nil
}

func (s *txnSink) ProcessRecord(_ sdk.Context, rec sdk.Record) error {
	s.open = append(s.open, string(rec.Value))
	return nil
}

func (*txnSink) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

func (s *txnSink) PreCommit(ctx sdk.Context, id uint64) error {
	s.ext.calls = append(s.ext.calls, fmt.Sprintf("precommit %d", id))
	ctx.State().Set([]byte(txnKey(ctx, id)), nil)
	if s.failPre {
		return errors.New("disk full")
	}
	s.ext.prepared[txnKey(ctx, id)], s.open = s.open, nil
	return nil
}

func (s *txnSink) Commit(ctx sdk.Context, id uint64) error {
	s.ext.calls = append(s.ext.calls, fmt.Sprintf("commit %d", id))
	return sdk.ScanAllGroups(ctx.State(), []byte("txn/"), func(k, _ []byte) error {
		if txnID(k) <= id {
			s.ext.committed = append(s.ext.committed, s.ext.prepared[string(k)]...)
			delete(s.ext.prepared, string(k))
			ctx.State().Delete(k)
		}
		return nil
	})
}

func (s *txnSink) Close(sdk.Context) error {
	s.ext.calls = append(s.ext.calls, "close")
	return nil
}

func (*txnSink) Flush(sdk.Context) error { return errors.New("flushed") }

func send(t *testing.T, h *sdktest.Harness, vals ...string) {
	t.Helper()
	for _, v := range vals {
		if err := h.Send("in", sdk.Record{Value: []byte(v)}); err != nil {
			t.Fatal(err)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestHarnessCheckpointCompleteRestore(t *testing.T) {
	ext := newExternal()
	h, err := sdktest.New(func() sdk.Operator { return &txnSink{ext: ext} })
	must(t, err)
	send(t, h, "a", "b")
	must(t, h.Checkpoint(1))
	if _, ok := h.GetInGroup(0, []byte("txn/0/1")); !ok {
		t.Fatal("PreCommit's state write is not in the state after the checkpoint")
	}
	snap, ok := h.Snapshot(1)
	if !ok || len(snap.Entries()) != 1 || string(snap.Entries()[0].Key) != "txn/0/1" {
		t.Fatalf("checkpoint 1's snapshot: got %v (%v), want txn/0/1", snap.Entries(), ok)
	}
	send(t, h, "c")
	must(t, h.Checkpoint(2))
	send(t, h, "d")
	if err := h.Checkpoint(2); err == nil {
		t.Fatal("a checkpoint id taken twice was accepted")
	}
	must(t, h.Complete(1))
	if !slices.Equal(ext.committed, []string{"a", "b"}) {
		t.Fatalf("after Complete(1) committed %v, want [a b]", ext.committed)
	}
	if err := h.Complete(7); err == nil {
		t.Fatal("completing a checkpoint never taken was accepted")
	}
	// Checkpoint 2 never completes: roll back to 1. The old operator is
	// closed, a fresh one initialised on checkpoint 1's state (which no
	// longer lists 2: Init aborts it), and Commit(1) comes again, after
	// Init.
	ext.calls = nil
	must(t, h.Rollback())
	if want := []string{"close", "init(group 0)", "commit 1"}; !slices.Equal(ext.calls, want) {
		t.Fatalf("calls of the rollback: got %v, want %v", ext.calls, want)
	}
	if len(ext.prepared) != 0 {
		t.Fatalf("checkpoint 2's transaction survived the rollback to 1: %v", ext.prepared)
	}
	if _, ok := h.GetInGroup(0, []byte("txn/0/2")); ok {
		t.Fatal("the state of checkpoint 2 survived the rollback to 1")
	}
	if !slices.Equal(ext.committed, []string{"a", "b"}) {
		// Checkpoint 1's state still lists its transaction: committed
		// again after the restore, which finds it done.
		t.Fatalf("after the rollback committed %v, want [a b] once", ext.committed)
	}
	if h.Restarts() != 0 {
		t.Fatalf("a rollback counted %d restarts", h.Restarts())
	}
	if err := h.Checkpoint(2); err == nil {
		t.Fatal("a checkpoint id not after the newest taken was accepted after a restore")
	}
	send(t, h, "c2")
	must(t, h.Checkpoint(3))
	must(t, h.Complete(3))
	if !slices.Equal(ext.committed[2:], []string{"c2"}) {
		t.Fatalf("checkpoint 3 committed %v, want [c2]", ext.committed[2:])
	}
	if err := h.Flush(); err == nil || !strings.Contains(err.Error(), "flushed") {
		t.Fatalf("Flush: got %v, want the sink's Flush error", err)
	}
}

func TestHarnessCrashDoesNotClose(t *testing.T) {
	ext := newExternal()
	h, err := sdktest.New(func() sdk.Operator { return &txnSink{ext: ext} })
	must(t, err)
	send(t, h, "a")
	must(t, h.Checkpoint(1))
	ext.calls = nil
	must(t, h.Crash(1))
	if want := []string{"init(group 0)", "commit 1"}; !slices.Equal(ext.calls, want) {
		t.Fatalf("calls of the crash: got %v, want %v (no Close)", ext.calls, want)
	}
	ext.calls = nil
	must(t, h.Close())
	if want := []string{"close", "close"}; !slices.Equal(ext.calls, want) {
		t.Fatalf("Close: got %v, want the live and the crashed operator closed", ext.calls)
	}
	if err := h.Restore(1); err == nil {
		t.Fatal("Restore after Close accepted")
	}
}

func TestHarnessFailedPreCommitFailsTheCheckpoint(t *testing.T) {
	ext := newExternal()
	sink := &txnSink{ext: ext, failPre: true}
	h, err := sdktest.New(func() sdk.Operator { return sink })
	must(t, err)
	send(t, h, "a")
	if err := h.Checkpoint(1); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Checkpoint: got %v, want the pre-commit's error", err)
	}
	if _, ok := h.GetInGroup(0, []byte("txn/0/1")); ok {
		t.Fatal("a failed PreCommit's state write was kept")
	}
	if _, ok := h.Snapshot(1); ok {
		t.Fatal("a failed checkpoint has a snapshot")
	}
	if err := h.Restore(1); err == nil {
		t.Fatal("restoring a failed checkpoint was accepted")
	}
	if h.Restarts() != 0 {
		t.Fatalf("a failed PreCommit restarted the operator (%d)", h.Restarts())
	}
	sink.failPre = false
	must(t, h.Checkpoint(2)) // the records before go to the next checkpoint
	must(t, h.Complete(2))
	if !slices.Equal(ext.committed, []string{"a"}) {
		t.Fatalf("committed %v, want [a]", ext.committed)
	}
}

// A checkpoint of two instances restored into one (a rescale): the new
// instance has both key groups' state, Init sees both, Commit comes with
// the checkpoint's id.
func TestHarnessRestoreRescaled(t *testing.T) {
	ext := newExternal()
	f := func() sdk.Operator { return &txnSink{ext: ext, par: 2} }
	h0, err := sdktest.New(f)
	must(t, err)
	h1, err := sdktest.New(f, sdktest.WithInstance(1))
	must(t, err)
	send(t, h0, "a")
	must(t, h0.Checkpoint(1))
	send(t, h1, "b")
	must(t, h1.Checkpoint(1))
	s0, _ := h0.Snapshot(1)
	s1, _ := h1.Snapshot(1)
	ext.calls = nil
	one, err := sdktest.New(f, sdktest.WithParallelism(1), sdktest.WithSnapshot(s0, s1))
	must(t, err)
	if info := one.Instance(); info.Parallelism != 1 || info.FirstGroup != 0 || info.EndGroup != 4 {
		t.Fatalf("rescaled instance: %+v", info)
	}
	if want := []string{"init(group 0)", "commit 1"}; !slices.Equal(ext.calls, want) {
		t.Fatalf("calls: got %v, want %v", ext.calls, want)
	}
	// Committed once by this test sink's Commit per listed entry: both
	// instances' entries are in the new instance's state.
	if got := slices.Sorted(slices.Values(ext.committed)); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("committed %v, want a and b", got)
	}
	if _, err := sdktest.New(f, sdktest.WithSnapshot(s0, sdktest.Snapshot{ID: 2})); err == nil {
		t.Fatal("snapshots of two checkpoints accepted")
	}
	must(t, one.Restore(1)) // the restored checkpoint can be restored again
}

// A source keeps its position in State: restored from a checkpoint it
// produces again exactly what followed, and its end of stream is
// forgotten; the watermark is the snapshot's.
func TestHarnessSourceRestore(t *testing.T) {
	h, err := sdktest.New(func() sdk.Operator { return numbers{n: 45, wm: &sdk.WatermarkStrategy{}} })
	must(t, err)
	must(t, h.Poll())
	must(t, h.Poll())
	must(t, h.Checkpoint(1))
	wm := h.Watermark()
	for range 2 {
		must(t, h.Poll())
	}
	if err := h.Poll(); !errors.Is(err, sdk.ErrEndOfStream) {
		t.Fatalf("fifth poll: got %v, want end of stream", err)
	}
	after := h.Take("in")[20:]
	must(t, h.Restore(1))
	if h.Finished() || !h.Watermark().Equal(wm) {
		t.Fatalf("after the restore: finished %v, watermark %v; want false and %v", h.Finished(), h.Watermark(), wm)
	}
	for range 2 {
		must(t, h.Poll())
	}
	if err := h.Poll(); !errors.Is(err, sdk.ErrEndOfStream) {
		t.Fatalf("poll after the restore: got %v, want end of stream", err)
	}
	got := h.Take("in")
	if len(got) != len(after) {
		t.Fatalf("after the restore produced %d records, want %d", len(got), len(after))
	}
	for i := range got {
		if !got[i].EventTime.Equal(after[i].EventTime) {
			t.Fatalf("record %d after the restore is at %v, want %v", i, got[i].EventTime, after[i].EventTime)
		}
	}
}

func TestGraphCheckpointRestore(t *testing.T) {
	ext := newExternal()
	g, err := sdktest.NewGraph([]sdk.Factory{
		func() sdk.Operator { return &txnSink{ext: ext} },
		func() sdk.Operator { return numbers{n: 30} },
	})
	must(t, err)
	_, err = g.Poll("numbers")
	must(t, err)
	must(t, g.Checkpoint(1))
	_, err = g.Poll("numbers")
	must(t, err)
	must(t, g.Checkpoint(2))
	_, err = g.Poll("numbers")
	must(t, err)
	must(t, g.Complete(1))
	if len(ext.committed) != 10 {
		t.Fatalf("after checkpoint 1 committed %d records, want 10", len(ext.committed))
	}
	must(t, g.Restore(1)) // 2 never completed: records 10-29 come again
	for {
		fin, err := g.Poll("numbers")
		must(t, err)
		if fin {
			break
		}
	}
	must(t, g.Checkpoint(3))
	must(t, g.Complete(3))
	if len(ext.committed) != 30 {
		t.Fatalf("after the restore and checkpoint 3 committed %d records, want 30 (each once)", len(ext.committed))
	}
	snaps, ok := g.Snapshot("numbers", 3)
	if !ok || len(snaps) != 1 {
		t.Fatalf("Snapshot: %v %v", snaps, ok)
	}
}
