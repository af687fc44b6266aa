package file_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/connectors/file"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/sdktest"
)

// committedOutput returns the lines of the committed parts of path, read
// as the package documentation says: the parts in name order.
func committedOutput(t *testing.T, path string) []string {
	t.Helper()
	parts, err := filepath.Glob(path + ".part-*")
	sluicetest.Must(t, err)
	slices.Sort(parts)
	var out []string
	for _, p := range parts {
		out = append(out, readLines(t, p)...)
	}
	return out
}

// hidden returns the names of the parts in progress and pending in dir.
func hidden(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	sluicetest.Must(t, err)
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	return out
}

func numberedLines(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, strconv.Itoa(i))
	}
	return out
}

// eoSink starts instance index of f's sink under exactly-once (sdktest's
// default), closed when the test ends.
func eoSink(t *testing.T, f sdk.Factory, opts ...sdktest.Option) *sdktest.Harness {
	t.Helper()
	h, err := sdktest.New(f, opts...)
	sluicetest.Must(t, err)
	t.Cleanup(func() { _ = h.Close() })
	return h
}

func writeLinesTo(t *testing.T, h *sdktest.Harness, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		sluicetest.Must(t, h.Send("s", sdk.Record{Value: []byte(strconv.Itoa(i))}))
	}
}

// stateKeys returns h's state keys with prefix, sorted.
func stateKeys(h *sdktest.Harness, prefix string) []string {
	var out []string
	for _, e := range h.State() {
		if strings.HasPrefix(string(e.Key), prefix) {
			out = append(out, string(e.Key))
		}
	}
	return out
}

func TestExactlyOnceSinkCommitsPartsInCheckpointOrder(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.txt")
	h := eoSink(t, mustSink(t, file.SinkConfig{Name: "write", Stream: "s", Path: out, BufferSize: 16}))

	writeLinesTo(t, h, 0, 10)
	sluicetest.Must(t, h.Checkpoint(1))
	if got := committedOutput(t, out); len(got) != 0 {
		t.Fatalf("lines visible before Commit: %v", got)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Path itself was written under exactly-once (%v)", err)
	}
	if got := hidden(t, dir); !slices.Equal(got, []string{".out.txt.pending-00000000000000000001-write-00000"}) {
		t.Fatalf("hidden files %v, want the pending part of checkpoint 1", got)
	}
	if got := stateKeys(h, "file/txn/"); !slices.Equal(got, []string{"file/txn/write-00000/00000000000000000001"}) {
		t.Fatalf("state lists parts %v", got)
	}
	writeLinesTo(t, h, 10, 20) // after the barrier: the next part
	sluicetest.Must(t, h.Checkpoint(2))
	sluicetest.Must(t, h.Complete(1))
	if got := committedOutput(t, out); !slices.Equal(got, numberedLines(0, 10)) {
		t.Fatalf("after Commit(1) the output is %v, want lines 0-9", got)
	}
	writeLinesTo(t, h, 20, 25)
	sluicetest.Must(t, h.Checkpoint(3))
	sluicetest.Must(t, h.Complete(3)) // commits 2 as well
	sluicetest.Must(t, h.Complete(3))
	if got := committedOutput(t, out); !slices.Equal(got, numberedLines(0, 25)) {
		t.Fatalf("output %v, want lines 0-24 in order", got)
	}
	sluicetest.Must(t, h.Checkpoint(4)) // nothing written: no part
	if got := hidden(t, dir); len(got) != 0 {
		t.Fatalf("hidden files left: %v", got)
	}
	if got := stateKeys(h, "file/txn/"); len(got) != 0 {
		t.Fatalf("state still lists parts %v", got)
	}
}

// A restore deletes the part in progress at once; a pending part the
// restored state does not know is kept until a newer checkpoint completes
// (it may belong to a complete checkpoint the node was not told of: see
// TestExactlyOnceSinkKeepsThePartOfACheckpointItWasNotToldOf).
func TestExactlyOnceSinkRestoreCommitsOnceAndDeletesLaterParts(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.txt")
	h := eoSink(t, mustSink(t, file.SinkConfig{Name: "write", Stream: "s", Path: out, BufferSize: 8}))

	writeLinesTo(t, h, 0, 10)
	sluicetest.Must(t, h.Checkpoint(1))
	writeLinesTo(t, h, 10, 20)
	sluicetest.Must(t, h.Checkpoint(2)) // checkpoint 2 never completes
	writeLinesTo(t, h, 20, 30)          // written to the part in progress (small buffer)
	if got := hidden(t, dir); len(got) != 3 {
		t.Fatalf("before the crash: hidden files %v, want two pending parts and one in progress", got)
	}
	// The process dies: no Close, no Commit; restored from checkpoint 1
	// (Init, then Commit(1)).
	sluicetest.Must(t, h.Crash(1))
	if got := hidden(t, dir); !slices.Equal(got, []string{".out.txt.pending-00000000000000000002-write-00000"}) {
		t.Fatalf("after the restore: hidden files %v, want checkpoint 2's pending part only (not the part in progress; 1's committed)", got)
	}
	// Restored once more from checkpoint 1: committing again is harmless.
	sluicetest.Must(t, h.Restore(1))
	if got := committedOutput(t, out); !slices.Equal(got, numberedLines(0, 10)) {
		t.Fatalf("after the restores the output is %v, want lines 0-9 once", got)
	}
	replayAndCommit(t, h, out, 10, 30, 3)
	// A committed part consumed (moved away) by the reader, then a restore
	// from a checkpoint that still lists it: nothing to do, no error.
	sluicetest.Must(t, os.Rename(filepath.Join(dir, "out.txt.part-00000000000000000001-write-00000"), filepath.Join(dir, "consumed")))
	sluicetest.Must(t, h.Restore(1))
}

func TestExactlyOnceSinkAdoptsPartsWhenRescaled(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.txt")
	f := mustSink(t, file.SinkConfig{Name: "write", Stream: "s", Path: out, BufferSize: 8, Parallelism: 2})
	h0, h1 := eoSink(t, f), eoSink(t, f, sdktest.WithInstance(1))
	writeLinesTo(t, h0, 0, 10)
	writeLinesTo(t, h1, 10, 20)
	sluicetest.Must(t, h0.Checkpoint(1))
	sluicetest.Must(t, h1.Checkpoint(1))
	s0, _ := h0.Snapshot(1)
	s1, _ := h1.Snapshot(1)
	writeLinesTo(t, h1, 20, 30)
	sluicetest.Must(t, h1.Checkpoint(2)) // never completes

	one := eoSink(t, f, sdktest.WithParallelism(1), sdktest.WithSnapshot(s0, s1)) // Init, then Commit(1)
	if got := hidden(t, dir); len(got) != 1 {
		t.Fatalf("after the restore: hidden files %v, want instance 1's part of checkpoint 2 only", got)
	}
	got := committedOutput(t, out)
	if !slices.Equal(got, numberedLines(0, 20)) {
		t.Fatalf("output %v, want lines 0-19 (instance 0's part, then instance 1's)", got)
	}
	replayAndCommit(t, one, out, 20, 30, 3) // the old instance 1's part of 2 must go too
}

// replayAndCommit writes lines [from, to) to h, takes and commits
// checkpoint, and checks that the output is lines [0, to) once and that
// no part in progress or pending is left.
func replayAndCommit(t *testing.T, h *sdktest.Harness, out string, from, to int, checkpoint uint64) {
	t.Helper()
	writeLinesTo(t, h, from, to)
	sluicetest.Must(t, h.Checkpoint(checkpoint))
	sluicetest.Must(t, h.Complete(checkpoint))
	if got := committedOutput(t, out); !slices.Equal(got, numberedLines(0, to)) {
		t.Fatalf("output %v, want lines 0-%d once", got, to-1)
	}
	if got := hidden(t, filepath.Dir(out)); len(got) != 0 {
		t.Fatalf("hidden files left after checkpoint %d committed: %v", checkpoint, got)
	}
}

// Checkpoint 2 completed in the store, but the node was not told (its
// coordinator stopped coordinating or crashed while storing it): an
// instance is first restored from checkpoint 1 (the node's base), then the
// rollback restores checkpoint 2. The pending part of checkpoint 2 must
// survive the first restore: the second commits it. (Deleting it lost
// checkpoint 2's lines under SIGKILLs.)
func TestExactlyOnceSinkKeepsThePartOfACheckpointItWasNotToldOf(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.txt")
	h := eoSink(t, mustSink(t, file.SinkConfig{Name: "write", Stream: "s", Path: out, BufferSize: 8}))
	writeLinesTo(t, h, 0, 10)
	sluicetest.Must(t, h.Checkpoint(1))
	writeLinesTo(t, h, 10, 20)
	sluicetest.Must(t, h.Checkpoint(2)) // complete, never announced
	writeLinesTo(t, h, 20, 25)

	sluicetest.Must(t, h.Crash(1)) // restored from the node's base: Init, Commit(1)
	writeLinesTo(t, h, 10, 13)     // processed before the rollback reset it

	sluicetest.Must(t, h.Restore(2)) // the rollback: Close, Init, Commit(2)
	if got := committedOutput(t, out); !slices.Equal(got, numberedLines(0, 20)) {
		t.Fatalf("after the rollback to checkpoint 2 the output is %v, want lines 0-19", got)
	}
	replayAndCommit(t, h, out, 20, 30, 3)
}

func TestStdioCannotBeExactlyOnce(t *testing.T) {
	outF := mustSink(t, file.SinkConfig{Name: "print", Stream: "s", Path: file.Stdio})
	if _, ok := outF().(sdk.Committer); ok {
		t.Fatal("a stdout sink claims to take part in exactly-once")
	}
	if _, ok := mustSink(t, file.SinkConfig{Name: "write", Stream: "s", Path: "out.txt"})().(sdk.Committer); !ok {
		t.Fatal("a file sink is not an sdk.Committer")
	}
	inF := mustSource(t, file.SourceConfig{Name: "read", Stream: "s", Path: file.Stdio, Stdin: strings.NewReader("x\n")})
	if _, ok := inF().(sdk.Resumable); ok {
		t.Fatal("a stdin source claims to be resumable")
	}
	if _, ok := mustSource(t, file.SourceConfig{Name: "read", Stream: "s", Path: "in.txt"})().(sdk.Resumable); !ok {
		t.Fatal("a file source is not sdk.Resumable")
	}
	if _, err := sdktest.New(outF); !errors.Is(err, file.ErrNotResumable) {
		t.Fatalf("stdout sink Init under exactly-once: got %v, want ErrNotResumable", err)
	}
	if _, err := sdktest.New(inF); !errors.Is(err, file.ErrNotResumable) {
		t.Fatalf("stdin source Init under exactly-once: got %v, want ErrNotResumable", err)
	}
}

func TestExactlyOnceSourceResumesFromTheRestoredCheckpoint(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	want := makeLines(0, 100)
	writeLines(t, in, want, os.O_TRUNC)
	h, err := sdktest.New(mustSource(t, file.SourceConfig{Name: "read", Stream: "lines", Path: in, Batch: 10}))
	sluicetest.Must(t, err)
	t.Cleanup(func() { _ = h.Close() })
	for range 3 {
		sluicetest.Must(t, h.Poll())
	}
	sluicetest.Must(t, h.Checkpoint(1))
	for range 2 {
		sluicetest.Must(t, h.Poll())
	}
	after := h.Take("lines")[30:]

	sluicetest.Must(t, h.Crash(1))
	for range 2 {
		sluicetest.Must(t, h.Poll())
	}
	got := h.Take("lines")
	if len(got) != len(after) {
		t.Fatalf("after the restore produced %d lines, want %d", len(got), len(after))
	}
	for i := range got {
		if string(got[i].Value) != string(after[i].Value) || string(got[i].Value) != want[30+i] {
			t.Fatalf("line %d after the restore is %.20q, want %.20q", i, got[i].Value, want[30+i])
		}
	}
}
