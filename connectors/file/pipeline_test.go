package file_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connectors/file"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
)

const waitTimeout = 60 * time.Second

// makeLines returns n distinct lines of varying length.
func makeLines(from, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("line-%06d %s", from+i, strings.Repeat("x", (from+i)*7%300))
	}
	return out
}

func writeLines(t *testing.T, path string, lines []string, flag int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|flag, 0o644)
	sluicetest.Must(t, err)
	_, err = f.WriteString(strings.Join(lines, "\n") + "\n")
	sluicetest.Must(t, err)
	sluicetest.Must(t, f.Close())
}

// readLines returns the complete lines of path ("" if missing).
func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	sluicetest.Must(t, err)
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	} else {
		return nil
	}
	return strings.Split(string(b), "\n")
}

// checkExactlyOnce fails unless got holds every line of want exactly once
// and nothing else.
func checkExactlyOnce(t *testing.T, got, want []string) {
	t.Helper()
	seen := make(map[string]int, len(got))
	for _, l := range got {
		seen[l]++
	}
	for _, l := range want {
		if seen[l] != 1 {
			t.Fatalf("line %.20q… written %d times, want once", l, seen[l])
		}
		delete(seen, l)
	}
	for l, n := range seen {
		t.Fatalf("unexpected line %.40q… written %d times", l, n)
	}
}

func mustSource(t *testing.T, cfg file.SourceConfig) sdk.Factory {
	t.Helper()
	f, err := file.NewSource(cfg)
	sluicetest.Must(t, err)
	return f
}

func mustSink(t *testing.T, cfg file.SinkConfig) sdk.Factory {
	t.Helper()
	f, err := file.NewSink(cfg)
	sluicetest.Must(t, err)
	return f
}

// start runs ops embedded at least once, where the sink writes its file
// directly (exactly once it writes committed parts: ctx_test.go and
// internal/integration's TestExactlyOnceFileToFileThroughSIGKILLs).
func start(t *testing.T, dir string, ops ...sdk.Factory) *node.Runtime {
	t.Helper()
	rt, err := node.Start(context.Background(), node.Config{NodeConfig: node.NodeConfig{DataDir: dir, NoSync: true, Logger: sluicetest.Logger(t)}, Guarantee: sdk.AtLeastOnce}, ops...)
	sluicetest.Must(t, err)
	t.Cleanup(func() { _ = rt.Stop(context.Background()) })
	return rt
}

func waitLines(t *testing.T, path string, n int) {
	t.Helper()
	sluicetest.WaitFor(t, waitTimeout, fmt.Sprintf("%d lines in %s", n, filepath.Base(path)), func() bool {
		return len(readLines(t, path)) >= n
	})
}

func instance(rt *node.Runtime, op string) node.InstanceStatus {
	for _, st := range rt.Status() {
		if st.Name == op && len(st.Instances) > 0 {
			return st.Instances[0]
		}
	}
	return node.InstanceStatus{}
}

// TestEveryLineOnce copies a file through four sink instances that share
// the output file, with small buffers so that they write often: every line
// arrives once and whole.
func TestEveryLineOnce(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out.txt")
	want := makeLines(0, 20000)
	writeLines(t, in, want, os.O_TRUNC)
	rt := start(t, filepath.Join(dir, "data"),
		mustSource(t, file.SourceConfig{Name: "read", Stream: "lines", Path: in, Batch: 100}),
		mustSink(t, file.SinkConfig{Name: "write", Stream: "lines", Path: out, Parallelism: 4, BufferSize: 512}))
	waitLines(t, out, len(want))
	sluicetest.Must(t, rt.Stop(context.Background()))
	checkExactlyOnce(t, readLines(t, out), want)
}

// TestRestartResumesAfterTheLastLine stops the runtime in the middle of
// the file (a gate holds the records back while the stop begins), starts
// it again on the same data directory, then appends lines and starts it a
// third time: after clean stops, every line arrives exactly once.
func TestRestartResumesAfterTheLastLine(t *testing.T) {
	dir := t.TempDir()
	data, in, out := filepath.Join(dir, "data"), filepath.Join(dir, "in.txt"), filepath.Join(dir, "out.txt")
	want := makeLines(0, 20000)
	writeLines(t, in, want, os.O_TRUNC)
	g := newGate()
	ops := func() []sdk.Factory {
		return []sdk.Factory{
			mustSource(t, file.SourceConfig{Name: "read", Stream: "lines", Path: in}),
			g.factory("lines", "gated"),
			mustSink(t, file.SinkConfig{Name: "write", Stream: "gated", Path: out}),
			func() sdk.Operator { return &probe{} },
		}
	}

	// Run 1: the gate holds the first record, so backpressure stops the
	// source after a few thousand lines. Stop, and open the gate only once
	// the runtime refuses input: the stop has begun and nothing is polled
	// any more.
	rt := start(t, data, ops()...)
	sluicetest.WaitFor(t, waitTimeout, "the gate to hold a record", g.holding)
	stopped := make(chan error, 1)
	go func() { stopped <- rt.Stop(context.Background()) }()
	sluicetest.WaitFor(t, waitTimeout, "the stop to begin", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return errors.Is(rt.Produce(ctx, probeStream, sdk.Record{}), sdk.ErrStopped)
	})
	g.open()
	sluicetest.Must(t, <-stopped)
	first := readLines(t, out)
	if len(first) == 0 || len(first) >= len(want) {
		t.Fatalf("first run wrote %d lines, want some of the %d", len(first), len(want))
	}
	checkExactlyOnce(t, first, want[:len(first)]) // in order from one instance: a prefix
	t.Logf("first run: %d lines", len(first))

	// Run 2 resumes after the last line produced and reads to the end.
	rt = start(t, data, ops()...)
	waitLines(t, out, len(want))
	sluicetest.Must(t, rt.Stop(context.Background()))
	checkExactlyOnce(t, readLines(t, out), want)

	// Run 3: only the appended lines are read.
	more := makeLines(len(want), 500)
	writeLines(t, in, more, os.O_APPEND)
	rt = start(t, data, ops()...)
	waitLines(t, out, len(want)+len(more))
	sluicetest.Must(t, rt.Stop(context.Background()))
	checkExactlyOnce(t, readLines(t, out), append(want, more...))
}

// TestFailedPollResumesFromTheLastGoodPoll makes Key panic once in the
// middle of the file: the attempt's records and offset are discarded
// together, and the restarted instance loses and repeats nothing.
func TestFailedPollResumesFromTheLastGoodPoll(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out.txt")
	want := makeLines(0, 5000)
	writeLines(t, in, want, os.O_TRUNC)
	var panicked atomic.Bool
	key := func(line []byte) []byte {
		if bytes.HasPrefix(line, []byte("line-002500 ")) && panicked.CompareAndSwap(false, true) {
			panic("key function fails once")
		}
		return line[:11]
	}
	rt := start(t, filepath.Join(dir, "data"),
		mustSource(t, file.SourceConfig{Name: "read", Stream: "lines", Path: in, Key: key, Batch: 300}),
		mustSink(t, file.SinkConfig{Name: "write", Stream: "lines", Path: out, Format: file.FormatKeyValue}))
	waitLines(t, out, len(want))
	if r := instance(rt, "read").Restarts; r != 1 {
		t.Errorf("source restarted %d times, want 1", r)
	}
	sluicetest.Must(t, rt.Stop(context.Background()))
	kv := make([]string, len(want))
	for i, l := range want {
		kv[i] = l[:11] + "\t" + l
	}
	checkExactlyOnce(t, readLines(t, out), kv)
}

// TestMissingFileIsRetried starts a source before its file exists: the
// error shows in the status, without restarts, until the file appears.
func TestMissingFileIsRetried(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out.txt")
	rt := start(t, filepath.Join(dir, "data"),
		mustSource(t, file.SourceConfig{Name: "read", Stream: "lines", Path: in}),
		mustSink(t, file.SinkConfig{Name: "write", Stream: "lines", Path: out}))
	sluicetest.WaitFor(t, waitTimeout, "the missing file in the status", func() bool {
		return strings.Contains(instance(rt, "read").LastError, "no such file")
	})
	want := makeLines(0, 100)
	writeLines(t, in, want, os.O_TRUNC)
	waitLines(t, out, len(want))
	if r := instance(rt, "read").Restarts; r != 0 {
		t.Errorf("source restarted %d times, want 0", r)
	}
	sluicetest.Must(t, rt.Stop(context.Background()))
	checkExactlyOnce(t, readLines(t, out), want)
}

// TestTruncatedFileFails truncates the file between two runs: the source
// reports ErrTruncated rather than guess where to resume.
func TestTruncatedFileFails(t *testing.T) {
	dir := t.TempDir()
	data, in, out := filepath.Join(dir, "data"), filepath.Join(dir, "in.txt"), filepath.Join(dir, "out.txt")
	want := makeLines(0, 100)
	writeLines(t, in, want, os.O_TRUNC)
	ops := func() []sdk.Factory {
		return []sdk.Factory{
			mustSource(t, file.SourceConfig{Name: "read", Stream: "lines", Path: in}),
			mustSink(t, file.SinkConfig{Name: "write", Stream: "lines", Path: out}),
		}
	}
	rt := start(t, data, ops()...)
	waitLines(t, out, len(want))
	sluicetest.Must(t, rt.Stop(context.Background()))
	writeLines(t, in, want[:10], os.O_TRUNC)
	rt = start(t, data, ops()...)
	sluicetest.WaitFor(t, waitTimeout, "ErrTruncated in the status", func() bool {
		return strings.Contains(instance(rt, "read").LastError, file.ErrTruncated.Error())
	})
	sluicetest.Must(t, rt.Stop(context.Background()))
	checkExactlyOnce(t, readLines(t, out), want)
}

// TestLongLineIsDeadLettered sends a line longer than MaxLineSize to the
// dead-letter stream and goes on with the next.
func TestLongLineIsDeadLettered(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out.txt")
	writeLines(t, in, []string{"short", strings.Repeat("y", 25), "after"}, os.O_TRUNC)
	dead := &sluicetest.Collector{}
	rt := start(t, filepath.Join(dir, "data"),
		mustSource(t, file.SourceConfig{Name: "read", Stream: "lines", Path: in, MaxLineSize: 10}),
		mustSink(t, file.SinkConfig{Name: "write", Stream: "lines", Path: out}),
		func() sdk.Operator {
			return &sluicetest.Sink{Name: "dead", Inputs: []sdk.Input{{Stream: sdk.DeadLetterStream("read")}}, Into: dead}
		})
	waitLines(t, out, 2)
	sluicetest.WaitFor(t, waitTimeout, "a dead letter", func() bool { return dead.Len() == 1 })
	sluicetest.Must(t, rt.Stop(context.Background()))
	checkExactlyOnce(t, readLines(t, out), []string{"short", "after"})
	rec := dead.All()[0].Record
	if got, want := string(rec.Value), strings.Repeat("y", 10); got != want {
		t.Errorf("dead letter value %q, want %q", got, want)
	}
	if off, _ := rec.Header(file.HeaderOffset); off != "6" {
		t.Errorf("dead letter offset %q, want 6", off)
	}
	if e, _ := rec.Header(sdk.HeaderError); !strings.Contains(e, "MaxLineSize") {
		t.Errorf("dead letter error %q, want it to mention MaxLineSize", e)
	}
}

// TestStdinSource reads lines from an injected stdin, the last without a
// newline.
func TestStdinSource(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.txt")
	want := makeLines(0, 3000) // more than the reader's queue
	stdin := strings.NewReader(strings.Join(want, "\n"))
	rt := start(t, filepath.Join(dir, "data"),
		mustSource(t, file.SourceConfig{Name: "read", Stream: "lines", Path: file.Stdio, Stdin: stdin}),
		mustSink(t, file.SinkConfig{Name: "write", Stream: "lines", Path: out}))
	waitLines(t, out, len(want))
	sluicetest.Must(t, rt.Stop(context.Background()))
	got := readLines(t, out)
	checkExactlyOnce(t, got, want)
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("line %d is %.20q…, want %.20q… (order kept)", i, got[i], want[i])
		}
	}
}

// TestStdoutSink writes key-value lines to an injected stdout.
func TestStdoutSink(t *testing.T) {
	var stdout sluicetest.Buffer
	rt := start(t, t.TempDir(),
		mustSink(t, file.SinkConfig{Name: "write", Stream: "in", Path: file.Stdio, Format: file.FormatKeyValue, Stdout: &stdout}))
	var want strings.Builder
	for i := range 1000 {
		k, v := fmt.Sprintf("k%d", i%7), fmt.Sprintf("v%d", i)
		sluicetest.Must(t, rt.Produce(context.Background(), "in", sdk.Record{Key: []byte(k), Value: []byte(v)}))
		fmt.Fprintf(&want, "%s\t%s\n", k, v)
	}
	sluicetest.WaitFor(t, waitTimeout, "1000 lines on stdout", func() bool { return strings.Count(stdout.String(), "\n") == 1000 })
	sluicetest.Must(t, rt.Stop(context.Background()))
	if got := stdout.String(); got != want.String() {
		t.Fatalf("stdout got %d bytes, want %d: %.60q…", len(got), want.Len(), got)
	}
}

// gate is an operator that holds its first record until opened, then
// forwards everything.
type gate struct {
	entered, opened chan struct{}
	enterOnce       sync.Once
	openOnce        sync.Once
}

func newGate() *gate { return &gate{entered: make(chan struct{}), opened: make(chan struct{})} }

func (g *gate) holding() bool {
	select {
	case <-g.entered:
		return true
	default:
		return false
	}
}

func (g *gate) open() { g.openOnce.Do(func() { close(g.opened) }) }

func (g *gate) factory(in, out string) sdk.Factory {
	return func() sdk.Operator { return &gateOp{g: g, in: in, out: out} }
}

type gateOp struct {
	g       *gate
	in, out string
}

func (o *gateOp) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: "gate", Inputs: []sdk.Input{{Stream: o.in}}, Outputs: []string{o.out}}
}
func (o *gateOp) Init(sdk.Context) error { return nil }
func (o *gateOp) ProcessRecord(ctx sdk.Context, rec sdk.Record) error {
	o.g.enterOnce.Do(func() { close(o.g.entered) })
	select {
	case <-o.g.opened:
	case <-ctx.Done():
		return ctx.Err()
	}
	return ctx.Produce(o.out, rec)
}
func (o *gateOp) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

// probe reads probeStream, so that the test can produce to it to learn
// whether the runtime is stopping.
type probe struct{}

const probeStream = "probe"

func (probe) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: "probe", Inputs: []sdk.Input{{Stream: probeStream}}}
}
func (probe) Init(sdk.Context) error                            { return nil }
func (probe) ProcessRecord(sdk.Context, sdk.Record) error       { return nil }
func (probe) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

// TestBoundedFileRunReturns: by default a file's end is its stream's end,
// so an embedded batch job over a file returns once every line is
// written (it waited for ever: the source idled at the end of the file).
func TestBoundedFileRunReturns(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out.txt")
	want := makeLines(0, 5000)
	writeLines(t, in, want, os.O_TRUNC)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	err := node.Run(ctx, node.Config{NodeConfig: node.NodeConfig{DataDir: filepath.Join(dir, "data"), NoSync: true, Logger: sluicetest.Logger(t)},
		Guarantee: sdk.AtLeastOnce},
		mustSource(t, file.SourceConfig{Name: "read", Stream: "lines", Path: in, Batch: 100}),
		mustSink(t, file.SinkConfig{Name: "write", Stream: "lines", Path: out, Parallelism: 2}))
	if err != nil || ctx.Err() != nil {
		t.Fatalf("Run over a file: %v (context: %v), want it to return by itself at the end of the file", err, ctx.Err())
	}
	checkExactlyOnce(t, readLines(t, out), want)
}

// TestFollowReadsAsTheFileGrows: with Follow the source reads on as lines
// are appended, and a last line without its '\n' is produced only whole.
func TestFollowReadsAsTheFileGrows(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out.txt")
	first := makeLines(0, 100)
	writeLines(t, in, first, os.O_TRUNC)
	f, err := os.OpenFile(in, os.O_WRONLY|os.O_APPEND, 0)
	sluicetest.Must(t, err)
	defer f.Close()
	_, err = f.WriteString("a line written in two")
	sluicetest.Must(t, err)
	start(t, filepath.Join(dir, "data"),
		mustSource(t, file.SourceConfig{Name: "read", Stream: "lines", Path: in, Batch: 10, Follow: true}),
		mustSink(t, file.SinkConfig{Name: "write", Stream: "lines", Path: out}))
	waitLines(t, out, len(first))
	_, err = f.WriteString(" halves\n")
	sluicetest.Must(t, err)
	more := makeLines(100, 50)
	writeLines(t, in, more, os.O_APPEND)
	want := append(append(first, "a line written in two halves"), more...)
	waitLines(t, out, len(want))
	checkExactlyOnce(t, readLines(t, out), want)
}
