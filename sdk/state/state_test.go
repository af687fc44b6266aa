package state_test

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/placement"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/codec"
	"github.com/sluicehq/sluice/sdk/sdktest"
	"github.com/sluicehq/sluice/sdk/state"
)

// The tests run their state code inside ProcessRecord of an operator on
// sdktest's Harness, whose State is the in-memory one of the SDK's test kit
// (key groups, rollback of a failed callback), not a double of this file.

const keyGroups = 16

// callOp runs *fn with the State of each record's callback.
type callOp struct{ fn *func(sdk.State) error }

func (callOp) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: "typed", Inputs: []sdk.Input{{Stream: "in", Routing: sdk.GroupBy}}, KeyGroups: keyGroups}
}
func (callOp) Init(sdk.Context) error { return nil }
func (o callOp) ProcessRecord(ctx sdk.Context, _ sdk.Record) error {
	return (*o.fn)(ctx.State())
}
func (callOp) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

// harness runs functions as callbacks of one operator instance.
type harness struct {
	*sdktest.Harness
	fn func(sdk.State) error
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{}
	sh, err := sdktest.New(func() sdk.Operator { return callOp{fn: &h.fn} })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sh.Close() })
	h.Harness = sh
	return h
}

// in runs fn as the callback of a record with key, so with the State of
// key's key group; fn's error fails the callback (its writes are rolled
// back) and is returned.
func (h *harness) in(key string, fn func(s sdk.State) error) error {
	h.fn = fn
	return h.Send("in", sdk.Record{Key: []byte(key)})
}

// must is in for a callback that must succeed.
func (h *harness) must(t *testing.T, key string, fn func(s sdk.State) error) {
	t.Helper()
	if err := h.in(key, fn); err != nil {
		t.Fatal(err)
	}
}

func TestValue(t *testing.T) {
	h := newHarness(t)
	total := state.NewValue("total", codec.Int64())
	h.must(t, "a", func(s sdk.State) error {
		if n, ok, err := total.Get(s); n != 0 || ok || err != nil {
			t.Errorf("before Set: got %d, %v, %v; want 0, false, nil", n, ok, err)
		}
		return total.Set(s, -7)
	})
	h.must(t, "a", func(s sdk.State) error {
		if n, ok, err := total.Get(s); n != -7 || !ok || err != nil {
			t.Errorf("after Set: got %d, %v, %v; want -7, true, nil", n, ok, err)
		}
		total.Clear(s)
		if n, ok, err := total.Get(s); n != 0 || ok || err != nil {
			t.Errorf("after Clear: got %d, %v, %v; want 0, false, nil", n, ok, err)
		}
		return nil
	})
	if got := h.State(); len(got) != 0 {
		t.Errorf("after Clear: state %v, want empty", got)
	}
}

func TestMap(t *testing.T) {
	h := newHarness(t)
	m := state.NewMap("scores", codec.Int64(), codec.String())
	keys := []int64{5, -3, 0, 1 << 40, -1 << 40, -1}
	h.must(t, "a", func(s sdk.State) error {
		for _, k := range keys {
			if err := m.Put(s, k, fmt.Sprint("v", k)); err != nil {
				return err
			}
		}
		return m.Put(s, 5, "five") // replaces
	})
	h.must(t, "a", func(s sdk.State) error {
		if v, ok, err := m.Get(s, 5); v != "five" || !ok || err != nil {
			t.Errorf("Get(5): got %q, %v, %v; want five, true, nil", v, ok, err)
		}
		if v, ok, err := m.Get(s, 6); v != "" || ok || err != nil {
			t.Errorf("Get(6): got %q, %v, %v; want \"\", false, nil", v, ok, err)
		}
		if err := m.Delete(s, -3); err != nil {
			return err
		}
		if err := m.Delete(s, 99); err != nil { // absent
			return err
		}
		var got []int64
		if err := m.Scan(s, func(k int64, v string) error {
			got = append(got, k)
			if want := fmt.Sprint("v", k); k != 5 && v != want {
				t.Errorf("Scan: %d = %q, want %q", k, v, want)
			}
			return nil
		}); err != nil {
			return err
		}
		if want := []int64{-1 << 40, -1, 0, 5, 1 << 40}; !slices.Equal(got, want) {
			t.Errorf("Scan: got keys %v, want %v (numeric order, -3 deleted)", got, want)
		}
		stop := errors.New("stop")
		n := 0
		if err := m.Scan(s, func(int64, string) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
			t.Errorf("Scan stopped by fn: got %v after %d calls, want stop after 1", err, n)
		}
		return m.Clear(s)
	})
	if got := h.State(); len(got) != 0 {
		t.Errorf("after Clear: state %v, want empty", got)
	}
}

func TestList(t *testing.T) {
	h := newHarness(t)
	l := state.NewList("seen", codec.JSON[[]string]())
	h.must(t, "a", func(s sdk.State) error {
		if got, err := l.All(s); got != nil || err != nil {
			t.Errorf("empty: got %v, %v; want nil, nil", got, err)
		}
		return nil
	})
	var want [][]string
	for i := range 300 { // past one byte of index, so order is by number
		v := []string{fmt.Sprint(i), strings.Repeat("x", i%3)}
		want = append(want, v)
		h.must(t, "a", func(s sdk.State) error { return l.Append(s, v) })
	}
	h.must(t, "a", func(s sdk.State) error {
		got, err := l.All(s)
		if err != nil {
			return err
		}
		if !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("All: got %d elements %v…, want %d in order appended", len(got), got[:min(3, len(got))], len(want))
		}
		if err := l.Clear(s); err != nil {
			return err
		}
		if got, err := l.All(s); got != nil || err != nil {
			t.Errorf("after Clear: got %v, %v; want nil, nil", got, err)
		}
		return l.Append(s, []string{"again"})
	})
	h.must(t, "a", func(s sdk.State) error {
		got, err := l.All(s)
		if err != nil || len(got) != 1 || got[0][0] != "again" {
			t.Errorf("after Clear and Append: got %v, %v; want [[again]]", got, err)
		}
		return nil
	})
	if got := len(h.State()); got != 2 {
		t.Errorf("one element: %d state entries, want 2 (the element, the next index)", got)
	}
}

// TestNamespaces: states of one operator never see each other's keys:
// names that are prefixes of each other (map "a" and map "am", which would
// share a prefix if names were not length-prefixed), the same name for a
// Value, a Map and a List, and map keys that spell another state's key
// (map "a" key "bv" and value "amb").
func TestNamespaces(t *testing.T) {
	h := newHarness(t)
	a := state.NewValue("a", codec.String())
	amb := state.NewValue("amb", codec.String())
	empty := state.NewValue("", codec.String())
	ma := state.NewMap("a", codec.String(), codec.String())
	mam := state.NewMap("am", codec.String(), codec.String())
	la := state.NewList("a", codec.String())
	h.must(t, "k", func(s sdk.State) error {
		for _, err := range []error{
			a.Set(s, "value a"), amb.Set(s, "value amb"), empty.Set(s, "value empty"),
			ma.Put(s, "bv", "map a, key bv"), ma.Put(s, "", "map a, key empty"),
			mam.Put(s, "", "map am, key empty"), la.Append(s, "list a"),
		} {
			if err != nil {
				return err
			}
		}
		return nil
	})
	h.must(t, "k", func(s sdk.State) error {
		for _, c := range []struct {
			v    state.Value[string]
			want string
		}{{a, "value a"}, {amb, "value amb"}, {empty, "value empty"}} {
			if got, _, err := c.v.Get(s); got != c.want || err != nil {
				t.Errorf("got %q, %v; want %q", got, err, c.want)
			}
		}
		for _, c := range []struct {
			m    state.Map[string, string]
			want []string
		}{{ma, []string{"=map a, key empty", "bv=map a, key bv"}}, {mam, []string{"=map am, key empty"}}} {
			var got []string
			if err := c.m.Scan(s, func(k, v string) error { got = append(got, k+"="+v); return nil }); err != nil {
				return err
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("Scan: got %q, want %q", got, c.want)
			}
		}
		if got, err := la.All(s); !slices.Equal(got, []string{"list a"}) || err != nil {
			t.Errorf("list: got %q, %v; want [list a]", got, err)
		}
		// Clearing one leaves the others.
		if err := ma.Clear(s); err != nil {
			return err
		}
		if got, _, _ := mam.Get(s, ""); got != "map am, key empty" {
			t.Errorf("map am after clearing map a: got %q", got)
		}
		for _, v := range []state.Value[string]{a, amb} {
			if got, ok, _ := v.Get(s); !ok {
				t.Errorf("a value is gone after clearing map a (%q left)", got)
			}
		}
		return nil
	})
	if got, want := len(h.State()), 6; got != want { // 3 values, map am's entry, the list's element and next index
		t.Errorf("%d state entries, want %d", got, want)
	}
}

// TestKeyGroups: state follows the current key group, as sdk.State does;
// a Map keyed by the record key is per record key.
func TestKeyGroups(t *testing.T) {
	k1, k2 := keysInTwoGroups(t)
	h := newHarness(t)
	last := state.NewValue("last", codec.String())
	h.must(t, k1, func(s sdk.State) error { return last.Set(s, k1) })
	h.must(t, k2, func(s sdk.State) error {
		if got, ok, _ := last.Get(s); ok {
			t.Errorf("in %s's key group: got %q, set in %s's, want none", k2, got, k1)
		}
		return nil
	})
}

// keysInTwoGroups returns two record keys of different key groups.
func keysInTwoGroups(t *testing.T) (string, string) {
	first := placement.KeyGroup([]byte("k0"), keyGroups)
	for i := 1; i < 100; i++ {
		k := fmt.Sprint("k", i)
		if placement.KeyGroup([]byte(k), keyGroups) != first {
			return "k0", k
		}
	}
	t.Fatal("no two keys in different key groups")
	return "", ""
}

// TestRollback: a failed callback's typed writes are undone with the
// State's.
func TestRollback(t *testing.T) {
	h := newHarness(t)
	l := state.NewList("l", codec.Int64())
	h.must(t, "a", func(s sdk.State) error { return l.Append(s, 1) })
	boom := errors.New("boom")
	if err := h.in("a", func(s sdk.State) error {
		if err := l.Append(s, 2); err != nil {
			return err
		}
		return boom
	}); !errors.Is(err, boom) {
		t.Fatalf("got %v, want boom", err)
	}
	h.must(t, "a", func(s sdk.State) error {
		if err := l.Append(s, 3); err != nil {
			return err
		}
		got, err := l.All(s)
		if want := []int64{1, 3}; !slices.Equal(got, want) || err != nil {
			t.Errorf("got %v, %v; want %v", got, err, want)
		}
		return nil
	})
}

// TestDecodeErrors: an entry that does not decode (written by another
// codec) fails Get, Scan and All with an error naming the state and
// wrapping the *codec.DecodeError.
func TestDecodeErrors(t *testing.T) {
	h := newHarness(t)
	asString := state.NewValue("v", codec.String())
	asInt := state.NewValue("v", codec.Int64())
	mString := state.NewMap("m", codec.String(), codec.String())
	mInt := state.NewMap("m", codec.String(), codec.Int64())
	mIntKeys := state.NewMap("m", codec.Int64(), codec.String())
	lString := state.NewList("l", codec.String())
	lJSON := state.NewList("l", codec.JSON[int]())
	h.must(t, "a", func(s sdk.State) error {
		if err := asString.Set(s, "seven"); err != nil {
			return err
		}
		if err := mString.Put(s, "k", "not a number"); err != nil {
			return err
		}
		return lString.Append(s, "{")
	})
	h.must(t, "a", func(s sdk.State) error {
		_, _, valueErr := asInt.Get(s)
		_, _, mapErr := mInt.Get(s, "k")
		scanErr := mInt.Scan(s, func(string, int64) error { return nil })
		keyErr := mIntKeys.Scan(s, func(int64, string) error { return nil })
		_, listErr := lJSON.All(s)
		for _, c := range []struct {
			name  string
			err   error
			state string
			codec string
			typ   string
			len   int
		}{
			{"Value.Get", valueErr, `value "v": decode value`, "int64", "int64", 5},
			{"Map.Get", mapErr, `map "m": decode value`, "int64", "int64", 12},
			{"Map.Scan value", scanErr, `map "m": decode value`, "int64", "int64", 12},
			{"Map.Scan key", keyErr, `map "m": decode key`, "int64", "int64", 1},
			{"List.All", listErr, `list "l": decode element`, "json", "int", 1},
		} {
			var de *codec.DecodeError
			if !errors.As(c.err, &de) {
				t.Errorf("%s: got %v, want a *codec.DecodeError", c.name, c.err)
				continue
			}
			if de.Codec != c.codec || de.Type != c.typ || de.Len != c.len {
				t.Errorf("%s: got codec %q type %q len %d, want %q %q %d", c.name, de.Codec, de.Type, de.Len, c.codec, c.typ, c.len)
			}
			if want := "state: " + c.state + ": codec: decode"; !strings.HasPrefix(c.err.Error(), want) {
				t.Errorf("%s: got %q, want it to start %q", c.name, c.err, want)
			}
		}
		return nil
	})
}

// TestStateError: the State's own error from Get is returned, wrapped.
func TestStateError(t *testing.T) {
	broken := errors.New("disk on fire")
	s := failingState{err: broken}
	_, _, err := state.NewValue("v", codec.Int64()).Get(s)
	if !errors.Is(err, broken) || !strings.Contains(err.Error(), `value "v"`) {
		t.Errorf("got %v, want disk on fire, naming the value", err)
	}
	if err := state.NewList("l", codec.Int64()).Append(s, 1); !errors.Is(err, broken) {
		t.Errorf("Append: got %v, want disk on fire", err)
	}
}

// failingState fails every read; it stands for a State whose store broke,
// which sdktest's cannot.
type failingState struct {
	sdk.State
	err error
}

func (f failingState) Get([]byte) ([]byte, error) { return nil, f.err }

// ownedState is the harness's State that, like the runtime's, keeps the
// values handed to SetOwned: it checks that no handed value is changed
// afterwards.
type ownedState struct {
	sdk.State
	kept map[string][]byte // key → the slice handed over
	copy map[string][]byte // key → its bytes then
}

func (o ownedState) SetOwned(key, value []byte) {
	o.kept[string(key)], o.copy[string(key)] = value, bytes.Clone(value)
	o.Set(key, value)
}

func TestSetOwned(t *testing.T) {
	h := newHarness(t)
	m := state.NewMap("m", codec.String(), codec.JSON[[]int]())
	l := state.NewList("l", codec.Int64())
	o := ownedState{kept: map[string][]byte{}, copy: map[string][]byte{}}
	h.must(t, "a", func(s sdk.State) error {
		o.State = s
		for i := range 10 {
			if err := m.Put(o, fmt.Sprint(i%3), []int{i, i}); err != nil {
				return err
			}
			if err := l.Append(o, int64(i)); err != nil {
				return err
			}
		}
		got, err := l.All(o)
		if want := []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}; !slices.Equal(got, want) || err != nil {
			t.Errorf("All: got %v, %v; want %v", got, err, want)
		}
		return nil
	})
	if len(o.kept) != 3+10+1 {
		t.Errorf("SetOwned stored %d keys, want 14 (3 map entries, 10 elements, the next index)", len(o.kept))
	}
	for k, v := range o.kept {
		if !bytes.Equal(v, o.copy[k]) {
			t.Errorf("value handed over for %q changed: %x, was %x", k, v, o.copy[k])
		}
	}
}

// TestEncodeError: a value the codec cannot encode is an error naming the
// state, and nothing is written.
func TestEncodeError(t *testing.T) {
	h := newHarness(t)
	v := state.NewValue("ch", codec.JSON[chan int]())
	err := h.in("a", func(s sdk.State) error { return v.Set(s, make(chan int)) })
	if err == nil || !strings.Contains(err.Error(), `state: value "ch": encode value`) {
		t.Errorf("got %v, want an encode error naming the value", err)
	}
	if got := h.State(); len(got) != 0 {
		t.Errorf("state %v, want empty", got)
	}
}

func Example() {
	clicks := state.NewMap("clicks", codec.String(), codec.Int64())
	count := func(ctx sdk.Context, rec sdk.Record) error {
		n, _, err := clicks.Get(ctx.State(), string(rec.Key))
		if err != nil {
			return err
		}
		return clicks.Put(ctx.State(), string(rec.Key), n+1)
	}
	h, _ := sdktest.New(func() sdk.Operator { return exampleOp{count} })
	defer h.Close()
	_ = h.Send("in", sdk.Record{Key: []byte("ad-1")}, sdk.Record{Key: []byte("ad-1")}, sdk.Record{Key: []byte("ad-2")})
	for _, e := range h.State() {
		n, _ := codec.Int64().Decode(e.Value)
		fmt.Printf("%q %d\n", e.Key, n)
	}
	// Output:
	// "\x00\x06clicksmad-1" 2
	// "\x00\x06clicksmad-2" 1
}

// exampleOp runs process for each record of "in".
type exampleOp struct {
	process func(sdk.Context, sdk.Record) error
}

func (exampleOp) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: "clicks", Inputs: []sdk.Input{{Stream: "in", Routing: sdk.GroupBy}}, KeyGroups: 1}
}
func (exampleOp) Init(sdk.Context) error                                { return nil }
func (o exampleOp) ProcessRecord(ctx sdk.Context, rec sdk.Record) error { return o.process(ctx, rec) }
func (exampleOp) ProcessTimer(sdk.Context, string, time.Time) error     { return nil }
