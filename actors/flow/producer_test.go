package flow

import (
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/placement"
)

// testHost is a Host with a table the test sets.
type testHost struct {
	table   atomic.Pointer[Table]
	mu      sync.Mutex
	dropped map[string]int
	held    map[string]*atomic.Int64
	lost    []string // LostInFlight's reports
}

func newHost() *testHost {
	return &testHost{dropped: map[string]int{}, held: map[string]*atomic.Int64{}}
}

func (h *testHost) Table() *Table { return h.table.Load() }
func (h *testHost) Dropped(stream string, n int) {
	h.mu.Lock()
	h.dropped[stream] += n
	h.mu.Unlock()
}
func (h *testHost) Held(stream string) *atomic.Int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.held[stream] == nil {
		h.held[stream] = new(atomic.Int64)
	}
	return h.held[stream]
}
func (h *testHost) Logger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
func (h *testHost) LostInFlight(stream string, to Endpoint, batches int, gen uint64) {
	h.mu.Lock()
	h.lost = append(h.lost, fmt.Sprintf("%s→%s: %d in generation %d", stream, to, batches, gen))
	h.mu.Unlock()
}

// testDest records the batches sent to it.
type testDest struct {
	ep      Endpoint
	remote  bool
	batches []*Batch
}

func (d *testDest) Endpoint() Endpoint { return d.ep }
func (d *testDest) Send(b *Batch)      { d.batches = append(d.batches, b) }
func (d *testDest) Remote() bool       { return d.remote }

// records returns the values of every record d received, in order.
func (d *testDest) records() []int {
	var out []int
	for _, b := range d.batches {
		for _, r := range b.Records {
			v, _ := strconv.Atoi(string(r.Value))
			out = append(out, v)
		}
	}
	return out
}

func dests(addr string, n int) []*testDest {
	out := make([]*testDest, n)
	for i := range out {
		out[i] = &testDest{ep: Endpoint{Addr: addr, ID: "op/x/0." + strconv.Itoa(i)}}
	}
	return out
}

// table returns a table where operator "x" reads stream "s" with routing r
// from ds, on the live addresses.
func table(version uint64, r core.Routing, ds []*testDest, live ...string) *Table {
	sub := &Subscription{Stream: "s", Operator: "x", Routing: r, KeyGroups: 16, Dests: make([]Dest, len(ds))}
	for i, d := range ds {
		sub.Dests[i] = d
	}
	t := &Table{Version: version, Streams: map[string][]*Subscription{"s": {sub}}, Live: map[string]bool{}}
	for _, a := range live {
		t.Live[a] = true
	}
	return t
}

func rec(i int) core.Record {
	return core.Record{Key: []byte("k" + strconv.Itoa(i)), Value: []byte(strconv.Itoa(i))}
}

func newProducer(h *testHost, hold bool) *Producer {
	return New(h, Config{BatchSize: 4, Credits: 2, BufferBatches: 2, HoldUnread: hold}, Endpoint{Addr: "me", ID: "p"}, 1)
}

func TestFullBatchesLeaveAndCreditsBound(t *testing.T) {
	h := newHost()
	d := dests("me", 1)
	h.table.Store(table(1, core.Shuffle, d, "me"))
	p := newProducer(h, false)
	p.Begin()
	for i := range 3 {
		p.Produce("s", rec(i))
	}
	if p.Flush(false); len(d[0].batches) != 0 {
		t.Fatalf("a partial buffer left on Flush(false): %d batches", len(d[0].batches))
	}
	if p.Flush(true); len(d[0].batches) != 1 || len(d[0].batches[0].Records) != 3 {
		t.Fatalf("Flush(true): %d batches, want one of 3 records", len(d[0].batches))
	}
	// One credit left: one more batch leaves, then the buffer fills up to
	// BufferBatches×BatchSize and the producer is blocked.
	blocked := false
	for i := 3; i < 3+4+8; i++ {
		p.Produce("s", rec(i))
		blocked = p.Flush(false)
	}
	if len(d[0].batches) != 2 {
		t.Fatalf("%d batches sent with 2 credits, want 2", len(d[0].batches))
	}
	if !blocked || p.Buffered() != 8 {
		t.Fatalf("blocked=%v buffered=%d, want blocked with 8 buffered", blocked, p.Buffered())
	}
	p.Ack(0)
	p.Ack(0)
	if blocked := p.Flush(false); blocked || len(d[0].batches) != 4 {
		t.Fatalf("after two acks: blocked=%v, %d batches; want unblocked and 4", blocked, len(d[0].batches))
	}
	if got := d[0].records(); len(got) != 15 || got[14] != 14 {
		t.Fatalf("records in order: %v", got)
	}
	if p.Inflight() != 2 {
		t.Fatalf("inflight %d, want 2", p.Inflight())
	}
}

func TestRollbackDiscardsTheAttempt(t *testing.T) {
	h := newHost()
	d := dests("me", 2)
	h.table.Store(table(1, core.GroupBy, d, "me"))
	p := newProducer(h, false)
	p.Begin()
	p.Produce("s", rec(1))
	p.Begin()
	p.Produce("s", rec(2))
	p.Produce("s", rec(3))
	p.Rollback()
	p.Flush(true)
	var got []int
	for _, x := range d {
		got = append(got, x.records()...)
	}
	if len(got) != 1 || got[0] != 1 {
		t.Fatalf("delivered %v, want only record 1", got)
	}
}

func TestGroupByKeepsKeysOnOneDestination(t *testing.T) {
	h := newHost()
	d := dests("me", 3)
	h.table.Store(table(1, core.GroupBy, d, "me"))
	p := newProducer(h, false)
	p.Begin()
	for i := range 300 {
		p.Produce("s", core.Record{Key: []byte("k" + strconv.Itoa(i%7)), Value: []byte(strconv.Itoa(i))})
		p.Flush(true)
		for s := range p.Slots() {
			p.Ack(int32(s))
		}
	}
	for j, x := range d {
		for _, b := range x.batches {
			for _, r := range b.Records {
				if want := placement.InstanceFor(placement.KeyGroup(r.Key, 16), 16, 3); want != j {
					t.Fatalf("key %s went to instance %d, want %d", r.Key, j, want)
				}
			}
		}
	}
}

// A layout change freezes the subscription: records wait until every batch
// of the old layout is acknowledged or bounced, then go out under the new
// layout, bounced ones first.
func TestLayoutChangeKeepsOrder(t *testing.T) {
	h := newHost()
	old := dests("a", 1)
	h.table.Store(table(1, core.GroupBy, old, "a", "b"))
	p := newProducer(h, false)
	p.Begin()
	for i := range 4 {
		p.Produce("s", rec(i))
	}
	p.Flush(true) // records 0..3 in flight to a
	moved := dests("b", 1)
	h.table.Store(table(2, core.GroupBy, moved, "a", "b"))
	p.Begin()
	for i := 4; i < 6; i++ {
		p.Produce("s", rec(i))
	}
	p.Flush(true)
	if len(moved[0].batches) != 0 {
		t.Fatal("records went to the new layout while the old one had a batch in flight")
	}
	p.Bounce(0, old[0].batches[0].Records, nil) // a bounces 0..3
	p.Flush(true)
	if got := moved[0].records(); len(got) != 6 || got[0] != 0 || got[4] != 4 {
		t.Fatalf("new owner got %v, want 0..5 in order", got)
	}
}

// A batch in flight to a node that left is given up when the node leaves
// the table; if the node bounces it after all (a graceful leave), the
// records must still go out, not wait in a subscription that already
// thawed. (Found while checking issue 17 point 6.)
func TestBounceAfterTheLayoutThawed(t *testing.T) {
	h := newHost()
	old := dests("b", 1)
	h.table.Store(table(1, core.GroupBy, old, "a", "b"))
	p := newProducer(h, false)
	p.SetGeneration(7)
	p.Begin()
	for i := range 3 {
		p.Produce("s", rec(i))
	}
	p.Flush(true) // in flight to b
	now := dests("a", 1)
	h.table.Store(table(2, core.GroupBy, now, "a")) // b left the cluster
	p.Begin()
	p.Produce("s", rec(3))
	p.Flush(true)
	if got := now[0].records(); len(got) != 1 || got[0] != 3 {
		t.Fatalf("after b left, a got %v, want [3]", got)
	}
	// The host hears of the batch given up, with its generation: under
	// exactly-once the node has the cluster roll back for it.
	if want := fmt.Sprintf("s→%s: 1 in generation 7", old[0].ep); len(h.lost) != 1 || h.lost[0] != want {
		t.Fatalf("LostInFlight heard %q, want [%q]", h.lost, want)
	}
	p.Bounce(0, old[0].batches[0].Records, nil) // b's bounce arrives late
	p.Flush(true)
	if got := now[0].records(); len(got) != 4 {
		t.Fatalf("after the late bounce a got %v, want all 4 records; %d buffered", got, p.Buffered())
	}
}

// A batch bounced back by an operator that was killed meanwhile (its
// subscription is gone from the table) is dropped: held, it kept the
// Producer pending for ever, and a node's Stop waiting for it (found by
// the CLI walkthrough test, which kills trending-urls and then stops).
func TestBounceFromAKilledOperatorIsDropped(t *testing.T) {
	h := newHost()
	d := dests("b", 1)
	empty := &Table{Version: 2, Streams: map[string][]*Subscription{}, Live: map[string]bool{"a": true, "b": true}}
	h.table.Store(table(1, core.Shuffle, d, "a", "b"))
	p := newProducer(h, false)
	p.Begin()
	for i := range 3 {
		p.Produce("s", rec(i))
	}
	p.Flush(true) // in flight to the operator
	h.table.Store(empty)
	p.Refresh() // the operator is killed
	p.Bounce(0, d[0].batches[0].Records, nil)
	p.Flush(true)
	if p.Pending() || p.Buffered() != 0 {
		t.Fatalf("after the killed operator's bounce: pending %v, %d buffered; want nothing", p.Pending(), p.Buffered())
	}
}

func TestUnreadRecords(t *testing.T) {
	d := dests("me", 1)
	withReader := table(2, core.Shuffle, d, "me")
	empty := &Table{Version: 1, Streams: map[string][]*Subscription{}, Live: map[string]bool{"me": true}}

	t.Run("dropped and counted without durability", func(t *testing.T) {
		h := newHost()
		h.table.Store(empty)
		p := newProducer(h, false)
		p.Begin()
		p.Produce("s", rec(1))
		if h.dropped["s"] != 1 || p.Buffered() != 0 {
			t.Fatalf("dropped %d, buffered %d; want 1 and 0", h.dropped["s"], p.Buffered())
		}
	})
	t.Run("held when a newer table has a reader", func(t *testing.T) {
		h := newHost()
		h.table.Store(empty)
		p := newProducer(h, false)
		p.Begin()
		h.table.Store(withReader) // published during the attempt
		p.Produce("s", rec(1))
		if h.dropped["s"] != 0 || h.Held("s").Load() != 1 {
			t.Fatalf("dropped %d, held %d; want 0 and 1", h.dropped["s"], h.Held("s").Load())
		}
		p.Begin()
		p.Flush(true)
		if got := d[0].records(); len(got) != 1 || h.Held("s").Load() != 0 {
			t.Fatalf("after adopting the table: delivered %v, held %d", got, h.Held("s").Load())
		}
	})
	t.Run("held with durability until a reader appears, then blocked", func(t *testing.T) {
		h := newHost()
		h.table.Store(empty)
		p := newProducer(h, true)
		p.Begin()
		blocked := false
		for i := range 8 {
			p.Produce("s", rec(i))
			blocked = p.Flush(false)
		}
		if !blocked || !p.Holding() || h.Held("s").Load() != 8 {
			t.Fatalf("blocked=%v holding=%v held=%d; want blocked, holding 8", blocked, p.Holding(), h.Held("s").Load())
		}
		p.Begin()
		p.Produce("s", rec(8))
		p.Rollback()
		if h.Held("s").Load() != 8 {
			t.Fatalf("rollback left %d held, want 8", h.Held("s").Load())
		}
		p.Produce(core.DeadLetterStream("x"), rec(99))
		if h.dropped[core.DeadLetterStream("x")] != 1 {
			t.Fatal("a dead letter with no reader was held, want dropped")
		}
		dd := dests("me", 1)
		h.table.Store(table(2, core.Shuffle, dd, "me"))
		p.Begin()
		p.Flush(true)
		if got := dd[0].records(); len(got) != 8 || got[7] != 7 || p.Holding() {
			t.Fatalf("reader got %v (holding %v), want 0..7", got, p.Holding())
		}
	})
}

// batchesWith returns the batches of d, each as its record values followed
// by its control kind, if any.
func (d *testDest) shape() []string {
	var out []string
	for _, b := range d.batches {
		s := ""
		for _, r := range b.Records {
			s += string(r.Value) + ","
		}
		if b.Control != nil {
			s += b.Control.Kind.String()
		}
		out = append(out, s)
	}
	return out
}

// A control follows the records produced before it on every edge, leaves
// even in a partial batch, and goes out as an empty batch where nothing
// was buffered.
func TestControlsTravelInOrder(t *testing.T) {
	h := newHost()
	d := dests("me", 2)
	h.table.Store(table(1, core.RoundRobin, d, "me"))
	p := newProducer(h, false)
	p.Begin()
	p.Produce("s", rec(0)) // to d0
	p.Emit(Control{Kind: Barrier, Checkpoint: 7}, []string{"s"})
	p.Produce("s", rec(1))                                                          // to d1, after the barrier
	p.Emit(Control{Kind: Watermark, Watermark: time.Unix(5, 0)}, []string{"other"}) // not an output here: nothing
	if blocked := p.Flush(false); blocked {
		t.Fatal("blocked")
	}
	if got := d[0].shape(); len(got) != 1 || got[0] != "0,barrier" {
		t.Fatalf("d0 got %v, want [0,barrier]", got)
	}
	if got := d[1].shape(); len(got) != 1 || got[0] != "barrier" {
		t.Fatalf("d1 got %v, want an empty barrier batch first", got)
	}
	p.Flush(true)
	if got := d[1].shape(); len(got) != 2 || got[1] != "1," {
		t.Fatalf("d1 got %v, want record 1 after the barrier", got)
	}
	if d[0].batches[0].Control.Checkpoint != 7 || d[0].batches[0].FromOp != "" {
		t.Fatalf("barrier %+v", d[0].batches[0].Control)
	}
}

// During a layout change, the latest watermark and an end-of-stream wait
// with the held records and follow them to the new layout; a barrier is
// dropped (the change aborts the checkpoint).
func TestControlsHeldAcrossALayoutChange(t *testing.T) {
	h := newHost()
	old := dests("a", 1)
	h.table.Store(table(1, core.GroupBy, old, "a", "b"))
	p := newProducer(h, false)
	p.Begin()
	p.Produce("s", rec(0))
	p.Flush(true) // in flight to a
	moved := dests("b", 1)
	h.table.Store(table(2, core.GroupBy, moved, "a", "b"))
	p.Begin()
	p.Produce("s", rec(1))
	if n := p.Emit(Control{Kind: Watermark, Watermark: time.Unix(1, 0)}, []string{"s"}); n != 0 {
		t.Fatalf("a watermark emitted while frozen: %d dropped, want 0 (held)", n)
	}
	// A barrier is not held: Emit says so, for the checkpoint to be abandoned.
	if n := p.Emit(Control{Kind: Barrier, Checkpoint: 3}, []string{"s"}); n != 1 {
		t.Fatalf("a barrier emitted while frozen: %d dropped, want 1", n)
	}
	p.Emit(Control{Kind: Watermark, Watermark: time.Unix(2, 0)}, []string{"s"})
	p.Emit(Control{Kind: EndOfStream}, []string{"s"})
	p.Emit(Control{Kind: Watermark, Watermark: time.Unix(3, 0)}, []string{"s"}) // after the end: ignored
	p.Flush(true)
	if len(moved[0].batches) != 0 {
		t.Fatal("sent under the new layout while frozen")
	}
	p.Ack(0)
	p.Flush(true)
	got := moved[0].shape()
	if len(got) != 1 || got[0] != "1,end-of-stream" {
		t.Fatalf("new layout got %v, want [1,end-of-stream]", got)
	}
}

// A bounced batch's control is sent again after its records.
func TestBouncedControlIsResent(t *testing.T) {
	h := newHost()
	old := dests("a", 1)
	h.table.Store(table(1, core.GroupBy, old, "a", "b"))
	p := newProducer(h, false)
	p.Begin()
	p.Produce("s", rec(0))
	p.Emit(Control{Kind: EndOfStream}, []string{"s"})
	p.Flush(true)
	moved := dests("b", 1)
	h.table.Store(table(2, core.GroupBy, moved, "a", "b"))
	b := old[0].batches[0]
	p.Bounce(b.Slot, b.Records, b.Control)
	p.Flush(true)
	if got := moved[0].shape(); len(got) != 1 || got[0] != "0,end-of-stream" {
		t.Fatalf("new owner got %v, want [0,end-of-stream]", got)
	}
}

// TestSlowSubscriberHoldsOnlyItsOwnRecords: two operators read one stream;
// one acknowledges nothing (slow, or failing and in backoff). The other
// gets every record while the slow one's records wait in its own buffer,
// and the Producer is blocked only once that buffer holds its credit
// window: Credits batches in flight and BufferBatches×BatchSize records.
func TestSlowSubscriberHoldsOnlyItsOwnRecords(t *testing.T) {
	h := newHost()
	slow, fast := &testDest{ep: Endpoint{Addr: "me", ID: "op/slow/0.0"}}, &testDest{ep: Endpoint{Addr: "me", ID: "op/fast/0.0"}}
	h.table.Store(&Table{Version: 1, Live: map[string]bool{"me": true}, Streams: map[string][]*Subscription{"s": {
		{Stream: "s", Operator: "slow", Routing: core.Shuffle, KeyGroups: 16, Dests: []Dest{slow}},
		{Stream: "s", Operator: "fast", Routing: core.Shuffle, KeyGroups: 16, Dests: []Dest{fast}},
	}}})
	p := newProducer(h, false) // BatchSize 4, Credits 2, BufferBatches 2
	p.Begin()
	window := (2 + 2) * 4
	produced, acked := 0, 0
	for blocked := false; !blocked; {
		if produced > 10*window {
			t.Fatalf("not blocked after %d records with a credit window of %d", produced, window)
		}
		p.Produce("s", rec(produced))
		produced++
		blocked = p.Flush(false)
		for ; acked < len(fast.batches); acked++ {
			p.Ack(fast.batches[acked].Slot) // the fast reader acknowledges at once
		}
	}
	if produced != window {
		t.Fatalf("blocked after %d records, want %d (the slow reader's credit window)", produced, window)
	}
	if got := fast.records(); len(got) != produced || got[produced-1] != produced-1 {
		t.Fatalf("the fast reader got %d of %d records", len(got), produced)
	}
	if got := len(slow.records()); got != 2*4 {
		t.Fatalf("the slow reader got %d records, want its 2 credits' worth, 8", got)
	}
	p.Ack(slow.batches[0].Slot)
	if blocked := p.Flush(false); blocked {
		t.Fatal("still blocked after the slow reader returned a credit")
	}
	if got := len(slow.records()); got != 3*4 {
		t.Fatalf("the slow reader got %d records after one ack, want 12", got)
	}
}

// A destination on another node may have RemoteCredits batches in flight,
// one on the Producer's node Credits; without RemoteCredits both have
// Credits.
// localAndRemote returns a host whose table has two readers of stream
// "s", each with one instance: operator "local" on this node and "remote"
// on another.
func localAndRemote() (h *testHost, local, remote *testDest) {
	h = newHost()
	local = &testDest{ep: Endpoint{Addr: "me", ID: "op/local/0.0"}}
	remote = &testDest{ep: Endpoint{Addr: "other", ID: "op/remote/0.0"}, remote: true}
	h.table.Store(&Table{Version: 1, Live: map[string]bool{"me": true, "other": true}, Streams: map[string][]*Subscription{"s": {
		{Stream: "s", Operator: "local", Routing: core.Shuffle, KeyGroups: 16, Dests: []Dest{local}},
		{Stream: "s", Operator: "remote", Routing: core.Shuffle, KeyGroups: 16, Dests: []Dest{remote}},
	}}})
	return h, local, remote
}

func TestRemoteDestinationsGetRemoteCredits(t *testing.T) {
	for _, tc := range []struct {
		remoteCredits, wantLocal, wantRemote int
	}{{remoteCredits: 5, wantLocal: 2, wantRemote: 5}, {remoteCredits: 0, wantLocal: 2, wantRemote: 2}} {
		h, local, remote := localAndRemote()
		p := New(h, Config{BatchSize: 4, Credits: 2, RemoteCredits: tc.remoteCredits, BufferBatches: 100}, Endpoint{Addr: "me", ID: "p"}, 1)
		p.Begin()
		for i := range 4 * 20 { // 20 full batches for each reader, none acknowledged
			p.Produce("s", rec(i))
			p.Flush(false)
		}
		if got := len(local.batches); got != tc.wantLocal {
			t.Errorf("RemoteCredits %d: %d batches in flight to the local reader, want %d", tc.remoteCredits, got, tc.wantLocal)
		}
		if got := len(remote.batches); got != tc.wantRemote {
			t.Errorf("RemoteCredits %d: %d batches in flight to the remote reader, want %d", tc.remoteCredits, got, tc.wantRemote)
		}
	}
}

// With BatchBytes, a batch ends at that many bytes of records as well as
// at BatchSize records: a record that would take a batch past the limit
// starts the next, a record larger than the limit leaves alone, a rolled
// back attempt gives its bytes back, and the buffer blocks the producer
// at BufferBatches batches, however few records they hold.
func TestBatchesEndAtBatchBytes(t *testing.T) {
	h := newHost()
	d := dests("me", 1)
	h.table.Store(table(1, core.Shuffle, d, "me"))
	p := New(h, Config{BatchSize: 100, BatchBytes: 1000, Credits: 100, BufferBatches: 3}, Endpoint{Addr: "me", ID: "p"}, 1)
	big := func(i, size int) core.Record {
		r := rec(i) // key "k<i>", value "<i>"
		r.Value = append(r.Value, make([]byte, size-RecordBytes(r))...)
		r.Headers = nil
		return r
	}
	p.Begin()
	for i := range 5 { // 300 bytes each: three fit in 1000, the fourth starts a batch
		p.Produce("s", big(i, 300))
	}
	p.Produce("s", big(5, 2500)) // alone in a batch of its own
	p.Produce("s", big(6, 10))
	p.Flush(false)
	var sizes []int
	for _, b := range d[0].batches {
		n := 0
		for _, r := range b.Records {
			n += RecordBytes(r)
		}
		sizes = append(sizes, n)
	}
	if fmt.Sprint(sizes) != "[900 600 2500]" {
		t.Fatalf("full batches of %v bytes, want [900 600 2500] (the 10-byte record waits)", sizes)
	}
	var keys []string
	for _, b := range d[0].batches {
		for _, r := range b.Records {
			keys = append(keys, string(r.Key))
		}
	}
	if fmt.Sprint(keys) != "[k0 k1 k2 k3 k4 k5]" {
		t.Fatalf("records %v, want k0..k5 in order", keys)
	}

	// A rolled back attempt takes its bytes with it: after it, 990 bytes
	// still fit with the 10 already buffered.
	p.Begin()
	p.Produce("s", big(7, 900))
	p.Rollback()
	p.Begin()
	p.Produce("s", big(8, 990))
	p.Flush(false)
	if n := len(d[0].batches); n != 4 || len(d[0].batches[3].Records) != 2 {
		t.Fatalf("%d batches, the last of %d records; want a 4th with the 10- and 990-byte records", n, len(d[0].batches[len(d[0].batches)-1].Records))
	}

	// Without credit, full batches pile up: the producer blocks once the
	// buffer holds more than BufferBatches of them.
	q := New(h, Config{BatchSize: 100, BatchBytes: 1000, Credits: 1, BufferBatches: 3}, Endpoint{Addr: "me", ID: "q"}, 1)
	q.Begin()
	blocked := false
	i := 100
	for ; !blocked && i < 200; i++ {
		q.Produce("s", big(i, 1000))
		blocked = q.Flush(false)
	}
	if !blocked || q.Buffered() > 5 {
		t.Fatalf("blocked=%v with %d records of 1000 bytes buffered; want blocked at 4 or 5 (3 full batches, then the next)", blocked, q.Buffered())
	}
}

// A destination on another node gets batches of RemoteBatchSize records,
// one on this node of BatchSize; the buffer limit follows each one's size.
func TestRemoteDestinationsGetRemoteBatchSize(t *testing.T) {
	h, local, remote := localAndRemote()
	p := New(h, Config{BatchSize: 4, RemoteBatchSize: 10, Credits: 100, BufferBatches: 2}, Endpoint{Addr: "me", ID: "p"}, 1)
	p.Begin()
	for i := range 20 {
		p.Produce("s", rec(i))
		p.Flush(false)
	}
	sizes := func(d *testDest) []int {
		var out []int
		for _, b := range d.batches {
			out = append(out, len(b.Records))
		}
		return out
	}
	if got := fmt.Sprint(sizes(local)); got != "[4 4 4 4 4]" {
		t.Errorf("batches to the local reader: %s records, want [4 4 4 4 4]", got)
	}
	if got := fmt.Sprint(sizes(remote)); got != "[10 10]" {
		t.Errorf("batches to the remote reader: %s records, want [10 10]", got)
	}
}
