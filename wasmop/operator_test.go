package wasmop_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/wasmtest"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/sdktest"
	"github.com/sluicehq/sluice/wasmop"
)

const (
	testGuest = "github.com/sluicehq/sluice/wasmop/internal/testguest"
	wordCount = "github.com/sluicehq/sluice/wasmop/examples/wordcount"
)

// cacheDir is wazero's compilation cache shared by the tests' hosts, so
// each module compiles once per run.
var cacheDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "wasmop-cache-")
	if err != nil {
		panic(err)
	}
	cacheDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// newHost starts a Host (on the shared compilation cache unless cfg
// names one) closed at the end of the test.
func newHost(t *testing.T, cfg wasmop.Config) *wasmop.Host {
	t.Helper()
	if cfg.CacheDir == "" {
		cfg.CacheDir = cacheDir
	}
	h, err := wasmop.NewHost(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.Close(context.Background()); err != nil {
			t.Errorf("close host: %v", err)
		}
	})
	return h
}

// load builds pkg and loads it into h.
func load(t *testing.T, h *wasmop.Host, pkg string) *wasmop.Module {
	t.Helper()
	m, err := h.Load(context.Background(), wasmtest.MustBuild(t, pkg))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// testMeta is the test guest's metadata.
func testMeta() sdk.Metadata {
	return sdk.Metadata{Name: "guest", Inputs: []sdk.Input{{Stream: "in", Routing: sdk.GroupBy}}, Outputs: []string{"out"}}
}

// values returns the records' key=value pairs.
func values(recs []sdk.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = string(r.Key) + "=" + string(r.Value)
	}
	return out
}

func TestGuestCountsInState(t *testing.T) {
	for name, cfg := range map[string]wasmop.Config{"deadline": {}, "no call timeout": {NoCallTimeout: true}} {
		t.Run(name, func(t *testing.T) {
			h := newHost(t, cfg)
			m := load(t, h, testGuest)
			hs, err := sdktest.New(m.Factory(testMeta()))
			if err != nil {
				t.Fatal(err)
			}
			defer hs.Close()
			for _, k := range []string{"a", "b", "a", "a"} {
				if err := hs.Send("in", sdk.Record{Key: []byte(k)}); err != nil {
					t.Fatal(err)
				}
			}
			got := strings.Join(values(hs.Take("out")), " ")
			if want := "a=1 b=1 a=2 a=3"; got != want {
				t.Fatalf("got %q, want %q", got, want)
			}
			v, ok := hs.Get([]byte("a"), []byte("a"))
			if n, err := sdk.BytesInt64(v); !ok || err != nil || n != 3 {
				t.Fatalf("state of a: %v %v %v, want 3 (sdk.PutInt64's encoding)", n, ok, err)
			}
		})
	}
}

func TestGuestHeadersStreamAndEventTime(t *testing.T) {
	h := newHost(t, wasmop.Config{})
	hs, err := sdktest.New(load(t, h, testGuest).Factory(testMeta()))
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Close()
	at := time.Unix(1700000000, 5)
	rec := sdk.Record{Key: []byte("k"), Value: []byte("headers"), EventTime: at, Headers: []sdk.Header{{Key: "x", Value: "1"}, {Key: "y", Value: ""}}}
	if err := hs.Send("in", rec); err != nil {
		t.Fatal(err)
	}
	out := hs.Take("out")
	if len(out) != 1 {
		t.Fatalf("got %d records, want 1", len(out))
	}
	r := out[0]
	if string(r.Value) != "in" || !r.EventTime.Equal(at) || len(r.Headers) != 2 || r.Headers[0] != (sdk.Header{Key: "x", Value: "1"}) || r.Headers[1].Key != "y" {
		t.Fatalf("got %+v, want value \"in\" (the stream), event time %v and the two headers", r, at)
	}
}

func TestGuestTimers(t *testing.T) {
	h := newHost(t, wasmop.Config{})
	start := time.Unix(1700000000, 0)
	hs, err := sdktest.New(load(t, h, testGuest).Factory(testMeta()), sdktest.WithTime(start))
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Close()
	due := start.Add(time.Minute)
	if err := hs.Send("in", sdk.Record{Key: []byte("k"), Value: []byte("timer"), EventTime: due}); err != nil {
		t.Fatal(err)
	}
	if n := len(hs.Timers()) + len(hs.EventTimers()); n != 2 {
		t.Fatalf("got %d timers, want a processing-time and an event-time timer", n)
	}
	if err := hs.AdvanceTime(2 * time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := hs.AdvanceWatermark(due); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(values(hs.Take("out")), " ")
	want := "timer:k=" + itoa(due.UnixNano()) + " event-timer:k=" + due.UTC().Format(time.RFC3339)
	if got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func itoa(n int64) string { return formatInt(n) }

func formatInt(n int64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

// TestGuestFailures: a guest that traps, loops or exceeds its memory
// fails only its call: the error is a bad record (dead-lettered at once by
// the runtime), the instance is replaced, and the next record is counted
// on the state as it was.
func TestGuestFailures(t *testing.T) {
	h := newHost(t, wasmop.Config{CallTimeout: time.Second, MemoryLimitPages: 256})
	m := load(t, h, testGuest)
	for _, tc := range []struct {
		value     string
		guestDied bool
		bad       bool
		says      string
	}{
		{"panic", true, true, "guest panics on k"},
		{"loop", true, true, "deadline"},
		{"oom", true, true, "out of memory"},
		{"bad", false, true, "value is bad"},
		{"err", false, false, "an ordinary failure"},
		{"produce-unknown", false, false, "unknown stream"},
	} {
		t.Run(tc.value, func(t *testing.T) {
			hs, err := sdktest.New(m.Factory(testMeta()))
			if err != nil {
				t.Fatal(err)
			}
			defer hs.Close()
			if err := hs.Send("in", sdk.Record{Key: []byte("k")}); err != nil {
				t.Fatal(err)
			}
			replaced := m.Replaced()
			err = hs.Send("in", sdk.Record{Key: []byte("k"), Value: []byte(tc.value)})
			if err == nil {
				t.Fatal("got no error")
			}
			if testing.Verbose() {
				t.Logf("error: %v", err)
			}
			if got := errors.Is(err, wasmop.ErrGuestFailed); got != tc.guestDied {
				t.Errorf("errors.Is(%v, ErrGuestFailed) = %v, want %v", err, got, tc.guestDied)
			}
			if got := errors.Is(err, sdk.ErrBadRecord); got != tc.bad {
				t.Errorf("errors.Is(%v, ErrBadRecord) = %v, want %v", err, got, tc.bad)
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Errorf("error %q does not say %q", err, tc.says)
			}
			wantReplaced := replaced
			if tc.guestDied {
				wantReplaced++
			}
			if got := m.Replaced(); got != wantReplaced {
				t.Errorf("Replaced() = %d, want %d", got, wantReplaced)
			}
			if err := hs.Send("in", sdk.Record{Key: []byte("k")}); err != nil {
				t.Fatalf("the record after: %v", err)
			}
			if got := strings.Join(values(hs.Take("out")), " "); got != "k=1 k=2" {
				t.Fatalf("got %q, want k=1 k=2 (the failed attempt left nothing)", got)
			}
		})
	}
}

func TestCheckModule(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	empty := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00} // a valid module with nothing in it
	for _, tc := range []struct {
		name, path, says string
	}{
		{"missing", filepath.Join(dir, "nope.wasm"), "cannot read the file"},
		{"not wasm", write("text.wasm", []byte("hello")), "not a WebAssembly module"},
		{"no exports", write("empty.wasm", empty), "missing exports sluice_buffer, sluice_init, sluice_process, sluice_timer"},
		{"corrupt", write("corrupt.wasm", append(append([]byte{}, empty...), 0x01, 0xff)), "does not compile"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := wasmop.CheckModule(context.Background(), tc.path)
			var me *wasmop.ModuleError
			if !errors.As(err, &me) || me.Field != "module" {
				t.Fatalf("got %v, want a *ModuleError naming the field module", err)
			}
			if !strings.Contains(err.Error(), tc.says) || !strings.HasPrefix(err.Error(), "module: ") {
				t.Fatalf("error %q does not start with module: and say %q", err, tc.says)
			}
		})
	}
	t.Run("guest", func(t *testing.T) {
		if err := wasmop.CheckModule(context.Background(), wasmtest.MustBuild(t, wordCount)); err != nil {
			t.Fatalf("the sample: %v", err)
		}
	})
}
