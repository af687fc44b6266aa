package nexmark_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/samples/nexmark"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/sdktest"
	"github.com/sluicehq/sluice/sdk/window"
)

// The bids are the same as before persons had names and auctions sellers
// (q5's answers depend on them): a fingerprint of the first 100,000
// events' bids, taken before that change.
func TestGeneratorBidsUnchanged(t *testing.T) {
	gen := nexmark.Config{Seed: 3}.Generator()
	h := fnv.New64a()
	for i := range int64(100000) {
		if e := gen.Event(i); e.Kind == nexmark.Bid {
			// The bid's encoding before events carried their time.
			b := binary.AppendUvarint([]byte{byte(nexmark.Bid)}, uint64(e.Auction))
			b = binary.AppendUvarint(binary.AppendUvarint(b, uint64(e.Bidder)), uint64(e.Price))
			h.Write(binary.BigEndian.AppendUint64(b, uint64(e.DateTime.UnixNano())))
		}
	}
	if got, want := h.Sum64(), uint64(0xc935f845fce26abd); got != want {
		t.Fatalf("bid stream fingerprint %#x, want %#x", got, want)
	}
}

// Persons and auctions follow the published generator: names from its
// lists, three quarters of the auctions by the hot seller (the first of the
// latest 100 people), the others by one of the 1,000 active people or up
// to 10 ahead; every event survives Encode and Decode.
func TestGeneratorPersonsAndAuctions(t *testing.T) {
	gen := nexmark.Config{Seed: 5}.Generator()
	const n = 100000
	names := map[string]int{}
	var auctions, hot int
	for i := range int64(n) {
		e := gen.Event(i)
		got, err := nexmark.Decode(e.Encode(nil))
		if err != nil || got != e {
			t.Fatalf("event %d: decoded %+v, %v; want %+v", i, got, err, e)
		}
		lastPerson := 1000 + i/50 // the person of event 50·k is 1000+k
		switch e.Kind {
		case nexmark.Person:
			if e.ID != lastPerson {
				t.Fatalf("event %d: person %d, want %d", i, e.ID, lastPerson)
			}
			names[e.Name]++
		case nexmark.Auction:
			auctions++
			switch {
			case e.Seller > lastPerson+10 || e.Seller < max(1000, lastPerson-1000):
				t.Fatalf("event %d: seller %d, last person %d", i, e.Seller, lastPerson)
			case e.Seller == 1000+(lastPerson-1000)/100*100:
				hot++
			}
		}
	}
	if len(names) != 11*9 {
		t.Errorf("%d distinct names, want 99 (11 first × 9 last)", len(names))
	}
	for name, k := range names {
		if k < n/50/99/3 || len(strings.Fields(name)) != 2 {
			t.Errorf("name %q drawn %d times of %d", name, k, n/50)
		}
	}
	// 3/4 by the hot seller, plus the random ones that pick it by chance.
	if auctions != n/50*3 || hot < auctions*70/100 || hot > auctions*80/100 {
		t.Fatalf("%d of %d auctions by the hot seller, want about three quarters", hot, auctions)
	}
}

// runQ8 runs query 8 in sdktest and returns its answers, sorted as
// Q8Expected sorts them.
func runQ8(t *testing.T, cfg nexmark.Config) []nexmark.NewUser {
	t.Helper()
	g := runGraph(t, nexmark.Q8, cfg)
	if late := g.Output(window.LateStream(nexmark.Q8JoinName)); len(late) > 0 {
		t.Errorf("%d late records", len(late))
	}
	var got []nexmark.NewUser
	for _, r := range g.Take(nexmark.Q8NewUsers) {
		u, err := nexmark.Q8Result(r)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, u)
	}
	slices.SortFunc(got, func(a, b nexmark.NewUser) int {
		if c := a.Start.Compare(b.Start); c != 0 {
			return c
		}
		return int(a.Person - b.Person)
	})
	return got
}

// checkQ8 compares answers with want, naming the first differences.
func checkQ8(t *testing.T, got []string, want []nexmark.NewUser) {
	t.Helper()
	w := make([]string, len(want))
	for j, u := range want {
		w[j] = u.String()
	}
	if slices.Equal(got, w) {
		return
	}
	missing, extra := diff(w, got), diff(got, w)
	t.Errorf("%d answers, want %d: missing %d (first: %q), unexpected or duplicated %d (first: %q)",
		len(got), len(want), len(missing), missing[:min(len(missing), 5)], len(extra), extra[:min(len(extra), 5)])
}

// diff returns the elements of a not in b (as multisets).
func diff(a, b []string) []string {
	left := map[string]int{}
	for _, s := range b {
		left[s]++
	}
	var out []string
	for _, s := range a {
		if left[s] > 0 {
			left[s]--
			continue
		}
		out = append(out, s)
	}
	return out
}

// TestQ8Exact runs query 8 in sdktest with parallelism 1 and 4, the
// watermark following the sources, and compares its answers with
// Q8Expected: 40 s of event time at 1,000 events/s, four windows of 200
// people each.
func TestQ8Exact(t *testing.T) {
	cfg := nexmark.Config{Events: 40000, EventsPerSecond: 1000, Seed: 3, Batch: 500}
	want := nexmark.Q8Expected(cfg)
	starts := map[time.Time]bool{}
	for _, u := range want {
		starts[u.Start] = true
	}
	if len(want) < 40 || len(starts) != 4 {
		t.Fatalf("expected answer: %d new users in %d windows, want at least 40 in 4", len(want), len(starts))
	}
	for _, p := range []int{1, 4} {
		t.Run(fmt.Sprintf("parallelism-%d", p), func(t *testing.T) {
			cfg := cfg
			cfg.Parallelism = p
			var got []string
			for _, u := range runQ8(t, cfg) {
				got = append(got, u.String())
			}
			checkQ8(t, got, want)
		})
	}
}

// q8Window is the window starting at 10 s of event time (2026-01-01 UTC).
var q8Window = time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC)

// TestQ8JoinsPerWindow feeds the join by hand: a person who sells in the
// window of registration is an answer (once, however many auctions); one
// selling only in the next window, or never registering, is not.
func TestQ8JoinsPerWindow(t *testing.T) {
	fs, err := nexmark.Q8(nexmark.Config{Events: 1})
	if err != nil {
		t.Fatal(err)
	}
	g, err := sdktest.NewGraph(fs[1:])
	if err != nil {
		t.Fatal(err)
	}
	at := func(d time.Duration) time.Time { return q8Window.Add(d) }
	ev := func(e nexmark.Event, t time.Time) sdk.Record { return sdk.Record{Value: e.Encode(nil), EventTime: t} }
	err = g.Send(nexmark.EventsStream,
		ev(nexmark.Event{Kind: nexmark.Person, ID: 1001, Name: "Kate Smith"}, at(time.Second)),
		ev(nexmark.Event{Kind: nexmark.Auction, ID: 1, Seller: 1001}, at(9*time.Second)),
		ev(nexmark.Event{Kind: nexmark.Auction, ID: 2, Seller: 1001}, at(2*time.Second)),
		ev(nexmark.Event{Kind: nexmark.Person, ID: 1002, Name: "Paul Jones"}, at(9*time.Second)),
		ev(nexmark.Event{Kind: nexmark.Auction, ID: 3, Seller: 1002}, at(10*time.Second)), // next window
		ev(nexmark.Event{Kind: nexmark.Auction, ID: 4, Seller: 1003}, at(3*time.Second)),  // never registered
		ev(nexmark.Event{Kind: nexmark.Bid, Auction: 1, Bidder: 1002, Price: 100}, at(4*time.Second)),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.AdvanceWatermark(at(10*time.Second - time.Nanosecond)); err != nil {
		t.Fatal(err)
	}
	if out := g.Output(nexmark.Q8NewUsers); len(out) != 0 {
		t.Fatalf("%d answers before the window closed", len(out))
	}
	if err := g.End(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range g.Take(nexmark.Q8NewUsers) {
		u, err := nexmark.Q8Result(r)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, u.String())
	}
	checkQ8(t, got, []nexmark.NewUser{{Person: 1001, Name: "Kate Smith", Start: q8Window}})
}

func TestQ8RejectsCorruptInput(t *testing.T) {
	fs, err := nexmark.Q8(nexmark.Config{Events: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		op     int
		stream string
		rec    sdk.Record
	}{
		{"empty event", 1, nexmark.EventsStream, sdk.Record{}},
		{"unknown kind", 1, nexmark.EventsStream, sdk.Record{Value: []byte{'x', 1}}},
		{"truncated person", 1, nexmark.EventsStream, sdk.Record{Value: []byte{'p', 0x80}}},
		{"truncated auction", 1, nexmark.EventsStream, sdk.Record{Value: []byte{'a', 7}}},
		{"auction with trailing bytes", 1, nexmark.EventsStream, sdk.Record{Value: []byte{'a', 7, 8, 9}}},
		{"bad join input", 2, nexmark.Q8KeyedStream, sdk.Record{Key: []byte("7"), Value: []byte("a?"), EventTime: q8Window}},
		{"bad window result", 3, nexmark.Q8WindowStream, sdk.Record{Key: []byte("7"), Value: []byte{9}}},
		{"window result without bounds", 3, nexmark.Q8WindowStream, sdk.Record{Key: []byte("7"), Value: []byte{3, 'A'}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := sdktest.New(fs[tc.op])
			if err != nil {
				t.Fatal(err)
			}
			if err := h.Send(tc.stream, tc.rec); err == nil {
				t.Fatalf("%q accepted", tc.rec.Value)
			}
			if tc.op == 1 && !strings.Contains(fmt.Sprint(h.Send(tc.stream, tc.rec)), "nexmark: corrupt event") {
				t.Errorf("the error does not say the event is corrupt")
			}
		})
	}
	if _, err := nexmark.Q8Result(sdk.Record{Key: []byte("7"), Value: []byte("Kate")}); err == nil {
		t.Error("Q8Result accepted an answer without a window start")
	}
	if _, err := nexmark.Decode(nil); err == nil || errors.Unwrap(err) == nil {
		t.Errorf("Decode(nil): %v, want a wrapped corrupt-event error", err)
	}
}
