package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/internal/wasmtest"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/sdktest"
	"github.com/sluicehq/sluice/wasmop"
)

// keyCountGuest is the wasm counterpart of wordCounter; testGuest does
// nothing for a record whose value is "noop" (the cost of a call).
const (
	keyCountGuest = "github.com/sluicehq/sluice/wasmop/examples/keycount"
	testGuest     = "github.com/sluicehq/sluice/wasmop/internal/testguest"
)

// noopMeta is the metadata of the empty operators: "words" in, "counts"
// out.
func noopMeta() sdk.Metadata {
	return sdk.Metadata{Name: "noop", Inputs: []sdk.Input{{Stream: "words"}}, Outputs: []string{"counts"}}
}

// noopOp is the empty operator in Go.
type noopOp struct{}

func (noopOp) Metadata() sdk.Metadata                            { return noopMeta() }
func (noopOp) Init(sdk.Context) error                            { return nil }
func (noopOp) ProcessRecord(sdk.Context, sdk.Record) error       { return nil }
func (noopOp) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

// emptyGuest builds the test guest into dir and returns a Host (to
// close) and its factory of empty operators.
func emptyGuest(ctx context.Context, dir string, cfg wasmop.Config) (*wasmop.Host, sdk.Factory, error) {
	path, err := wasmtest.Build(ctx, testGuest, dir)
	if err != nil {
		return nil, nil, err
	}
	cfg.CacheDir = dir
	h, err := wasmop.NewHost(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	m, err := h.Load(ctx, path)
	if err != nil {
		_ = h.Close(ctx)
		return nil, nil, err
	}
	return h, m.Factory(noopMeta()), nil
}

// wasmCounter builds the keyed counter guest into dir and returns a
// Host (to close) and its factory with wordCounter's metadata.
func wasmCounter(ctx context.Context, dir string, par int, cfg wasmop.Config) (*wasmop.Host, sdk.Factory, error) {
	path, err := wasmtest.Build(ctx, keyCountGuest, dir)
	if err != nil {
		return nil, nil, err
	}
	cfg.CacheDir = dir
	h, err := wasmop.NewHost(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	m, err := h.Load(ctx, path)
	if err != nil {
		_ = h.Close(ctx)
		return nil, nil, err
	}
	return h, m.Factory(wordCounter{par: par}.Metadata()), nil
}

// operatorLoop feeds n keyed records to one instance of factory in the
// test kit (no runtime: the operator's own cost plus the kit's, which is
// the same for both variants) and returns the time per record.
func operatorLoop(factory sdk.Factory, n int, value []byte) (Result, error) {
	h, err := sdktest.New(factory)
	if err != nil {
		return Result{}, err
	}
	defer h.Close()
	keys := make([][]byte, 10_000)
	for i := range keys {
		keys[i] = []byte("word-" + strconv.Itoa(i))
	}
	start, cpu := time.Now(), processCPU()
	for i := range n {
		if err := h.Send("words", sdk.Record{Key: keys[i%len(keys)], Value: value}); err != nil {
			return Result{}, err
		}
		if i%4096 == 4095 {
			h.Take("counts")
		}
	}
	return Result{Ops: int64(n), Elapsed: time.Since(start), CPU: processCPU() - cpu}, nil
}

// wasmRows: the keyed counter as a wasm guest against the same operator
// in Go, alternating in one process: the whole word count pipeline, and
// the operator alone in the test kit (ns per record; the difference is
// what the guest call, its host calls and the copies add).
func (t *tabler) wasmRows() ([]row, error) {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "sluice-bench-wasm-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	n := t.cfg.Records
	native, wasm, err := t.alternate([2]string{"word count, Go counter", "word count, wasm counter"}, t.cfg.Runs, true, func(second bool) (Result, error) {
		return WordCount(WordCountConfig{Records: n, Keys: 10_000, NoLatencies: true, Wasm: second, WasmDir: dir})
	}, nil)
	if err != nil {
		return nil, err
	}
	host, wf, err := wasmCounter(ctx, dir, 1, wasmop.Config{})
	if err != nil {
		return nil, err
	}
	defer host.Close(ctx)
	free, ff, err := wasmCounter(ctx, dir, 1, wasmop.Config{NoCallTimeout: true})
	if err != nil {
		return nil, err
	}
	defer free.Close(ctx)
	ops := min(n, 1_000_000)
	opNative, opWasm, err := t.alternate([2]string{"counter alone, Go", "counter alone, wasm"}, t.cfg.Runs, true, func(second bool) (Result, error) {
		if second {
			return operatorLoop(wf, ops, nil)
		}
		return operatorLoop(func() sdk.Operator { return wordCounter{par: 1} }, ops, nil)
	}, nil)
	if err != nil {
		return nil, err
	}
	opFree, err := t.measure("counter alone, wasm without call deadline", func() (Result, error) { return operatorLoop(ff, ops, nil) })
	if err != nil {
		return nil, err
	}
	empty, err := t.emptyCalls(ctx, dir, ops)
	if err != nil {
		return nil, err
	}
	base, rate := medianRate(native), medianRate(wasm)
	nsNative, nsWasm, nsFree := 1e9/medianRate(opNative), 1e9/medianRate(opWasm), 1e9/medianRate(opFree)
	return []row{
		{"sluice keyed word count, Go counter (baseline)", human(base), "records/s", "1.00×", "runs alternate with the next row"},
		{"sluice keyed word count, wasm counter (wazero)", human(rate), "records/s", fmt.Sprintf("%.2f×", rate/base),
			pairRange(native, wasm) + "; the counter is wasmop/examples/keycount; target ≥ 0.5×"},
		{"  keyed counter alone in sdktest, Go / wasm", fmt.Sprintf("%.0f / %.0f", nsNative, nsWasm), "ns/record", fmt.Sprintf("%.2f×", nsNative/nsWasm),
			fmt.Sprintf("+%.0f ns per record in the guest (one call, 2 host state calls, 1 emit)", nsWasm-nsNative)},
		{"  keyed counter alone, wasm with Config.NoCallTimeout", fmt.Sprintf("%.0f", nsFree), "ns/record", fmt.Sprintf("%.2f×", nsNative/nsFree),
			fmt.Sprintf("+%.0f ns per record: what the call deadline (wazero's CloseOnContextDone) costs is %.0f ns", nsFree-nsNative, nsWasm-nsFree)},
		empty,
	}, nil
}

// emptyCalls measures an operator that does nothing, in Go, as a wasm
// guest, and as a guest without call deadline: what a call alone costs.
func (t *tabler) emptyCalls(ctx context.Context, dir string, n int) (row, error) {
	guarded, gf, err := emptyGuest(ctx, dir, wasmop.Config{})
	if err != nil {
		return row{}, err
	}
	defer guarded.Close(ctx)
	free, ff, err := emptyGuest(ctx, dir, wasmop.Config{NoCallTimeout: true})
	if err != nil {
		return row{}, err
	}
	defer free.Close(ctx)
	noop := []byte("noop")
	var ns [3]float64
	for i, f := range []sdk.Factory{func() sdk.Operator { return noopOp{} }, gf, ff} {
		rs, err := t.measure([]string{"empty operator, Go", "empty operator, wasm", "empty operator, wasm without call deadline"}[i],
			func() (Result, error) { return operatorLoop(f, n, noop) })
		if err != nil {
			return row{}, err
		}
		ns[i] = 1e9 / medianRate(rs)
	}
	return row{"  empty operator in sdktest, Go / wasm / wasm without deadline", fmt.Sprintf("%.0f / %.0f / %.0f", ns[0], ns[1], ns[2]), "ns/record", "",
		fmt.Sprintf("a call adds %.0f ns (%.0f without deadline); target ≤ 150 ns for a stateless map", ns[1]-ns[0], ns[2]-ns[0])}, nil
}
