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

func initSink(t *testing.T, f sdk.Factory, c *callCtx) *file.Sink {
	t.Helper()
	s := f().(*file.Sink)
	sluicetest.Must(t, s.Init(c))
	t.Cleanup(func() { _ = s.Close(c) })
	return s
}

func writeLinesTo(t *testing.T, s *file.Sink, c *callCtx, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		sluicetest.Must(t, s.ProcessRecord(c, sdk.Record{Value: []byte(strconv.Itoa(i))}))
	}
}

func TestExactlyOnceSinkCommitsPartsInCheckpointOrder(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.txt")
	f := mustSink(t, file.SinkConfig{Name: "write", Stream: "s", Path: out, BufferSize: 16})
	c := eoCtx("write", 0, 1, 0, 1, nil)
	s := initSink(t, f, c)

	writeLinesTo(t, s, c, 0, 10)
	sluicetest.Must(t, s.PreCommit(c, 1))
	if got := committedOutput(t, out); len(got) != 0 {
		t.Fatalf("lines visible before Commit: %v", got)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Path itself was written under exactly-once (%v)", err)
	}
	if got := hidden(t, dir); !slices.Equal(got, []string{".out.txt.pending-00000000000000000001-write-00000"}) {
		t.Fatalf("hidden files %v, want the pending part of checkpoint 1", got)
	}
	if got := c.state.keys("file/part/"); !slices.Equal(got, []string{"file/part/write-00000/00000000000000000001"}) {
		t.Fatalf("state lists parts %v", got)
	}
	writeLinesTo(t, s, c, 10, 20) // after the barrier: the next part
	sluicetest.Must(t, s.PreCommit(c, 2))
	sluicetest.Must(t, s.Commit(c, 1))
	if got := committedOutput(t, out); !slices.Equal(got, numberedLines(0, 10)) {
		t.Fatalf("after Commit(1) the output is %v, want lines 0-9", got)
	}
	writeLinesTo(t, s, c, 20, 25)
	sluicetest.Must(t, s.PreCommit(c, 3))
	sluicetest.Must(t, s.Commit(c, 3)) // commits 2 as well
	sluicetest.Must(t, s.Commit(c, 3))
	if got := committedOutput(t, out); !slices.Equal(got, numberedLines(0, 25)) {
		t.Fatalf("output %v, want lines 0-24 in order", got)
	}
	sluicetest.Must(t, s.PreCommit(c, 4)) // nothing written: no part
	if got := hidden(t, dir); len(got) != 0 {
		t.Fatalf("hidden files left: %v", got)
	}
	if got := c.state.keys("file/part/"); len(got) != 0 {
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
	f := mustSink(t, file.SinkConfig{Name: "write", Stream: "s", Path: out, BufferSize: 8})
	c := eoCtx("write", 0, 1, 0, 1, nil)
	crashed := f().(*file.Sink)
	sluicetest.Must(t, crashed.Init(c))
	t.Cleanup(func() { _ = crashed.Close(c) }) // releases its file descriptor once the test is over

	writeLinesTo(t, crashed, c, 0, 10)
	sluicetest.Must(t, crashed.PreCommit(c, 1))
	checkpoint1 := c.state.snapshot()
	writeLinesTo(t, crashed, c, 10, 20)
	sluicetest.Must(t, crashed.PreCommit(c, 2)) // checkpoint 2 never completes
	writeLinesTo(t, crashed, c, 20, 30)         // written to the part in progress (small buffer)
	if got := hidden(t, dir); len(got) != 3 {
		t.Fatalf("before the crash: hidden files %v, want two pending parts and one in progress", got)
	}
	// The process dies: no Close, no Commit.

	c1 := c.restored(checkpoint1)
	r := initSink(t, f, c1)
	if got := hidden(t, dir); !slices.Equal(got, []string{".out.txt.pending-00000000000000000001-write-00000", ".out.txt.pending-00000000000000000002-write-00000"}) {
		t.Fatalf("after Init: hidden files %v, want checkpoint 1's and 2's pending parts (not the part in progress)", got)
	}
	sluicetest.Must(t, r.Commit(c1, 1))
	sluicetest.Must(t, r.Close(c1))
	// Restored once more from checkpoint 1: committing again is harmless.
	c2 := c.restored(checkpoint1)
	again := initSink(t, f, c2)
	sluicetest.Must(t, again.Commit(c2, 1))
	if got := committedOutput(t, out); !slices.Equal(got, numberedLines(0, 10)) {
		t.Fatalf("after the restores the output is %v, want lines 0-9 once", got)
	}
	replayAndCommit(t, again, c2, out, 10, 30, 2)
	// A committed part consumed (moved away) by the reader, then a restore
	// from a checkpoint that still lists it: nothing to do, no error.
	sluicetest.Must(t, os.Rename(filepath.Join(dir, "out.txt.part-00000000000000000001-write-00000"), filepath.Join(dir, "consumed")))
	c3 := c.restored(checkpoint1)
	third := initSink(t, f, c3)
	sluicetest.Must(t, third.Commit(c3, 1))
}

func TestExactlyOnceSinkAdoptsPartsWhenRescaled(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.txt")
	f := mustSink(t, file.SinkConfig{Name: "write", Stream: "s", Path: out, BufferSize: 8})
	c0, c1 := eoCtx("write", 0, 2, 0, 1, nil), eoCtx("write", 1, 2, 1, 2, nil)
	s0, s1 := initSink(t, f, c0), initSink(t, f, c1)
	writeLinesTo(t, s0, c0, 0, 10)
	writeLinesTo(t, s1, c1, 10, 20)
	sluicetest.Must(t, s0.PreCommit(c0, 1))
	sluicetest.Must(t, s1.PreCommit(c1, 1))
	checkpoint1 := merge(c0.state.snapshot(), c1.state.snapshot())
	writeLinesTo(t, s1, c1, 20, 30)
	sluicetest.Must(t, s1.PreCommit(c1, 2)) // never completes

	one := eoCtx("write", 0, 1, 0, 2, checkpoint1)
	r := initSink(t, f, one)
	if got := hidden(t, dir); len(got) != 3 {
		t.Fatalf("after Init: hidden files %v, want both instances' parts of checkpoint 1 and instance 1's of checkpoint 2", got)
	}
	sluicetest.Must(t, r.Commit(one, 1))
	got := committedOutput(t, out)
	if !slices.Equal(got, numberedLines(0, 20)) {
		t.Fatalf("output %v, want lines 0-19 (instance 0's part, then instance 1's)", got)
	}
	replayAndCommit(t, r, one, out, 20, 30, 3) // the old instance 1's part of 2 must go too
}

// replayAndCommit writes lines [from, to) to s, takes and commits
// checkpoint, and checks that the output is lines [0, to) once and that
// no part in progress or pending is left.
func replayAndCommit(t *testing.T, s *file.Sink, c *callCtx, out string, from, to int, checkpoint uint64) {
	t.Helper()
	writeLinesTo(t, s, c, from, to)
	sluicetest.Must(t, s.PreCommit(c, checkpoint))
	sluicetest.Must(t, s.Commit(c, checkpoint))
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
	f := mustSink(t, file.SinkConfig{Name: "write", Stream: "s", Path: out, BufferSize: 8})
	c := eoCtx("write", 0, 1, 0, 1, nil)
	crashed := f().(*file.Sink)
	sluicetest.Must(t, crashed.Init(c))
	t.Cleanup(func() { _ = crashed.Close(c) })
	writeLinesTo(t, crashed, c, 0, 10)
	sluicetest.Must(t, crashed.PreCommit(c, 1))
	checkpoint1 := c.state.snapshot()
	writeLinesTo(t, crashed, c, 10, 20)
	sluicetest.Must(t, crashed.PreCommit(c, 2))
	checkpoint2 := c.state.snapshot() // complete, never announced
	writeLinesTo(t, crashed, c, 20, 25)

	stale := c.restored(checkpoint1)
	s1 := f().(*file.Sink)
	sluicetest.Must(t, s1.Init(stale))
	sluicetest.Must(t, s1.Commit(stale, 1))
	writeLinesTo(t, s1, stale, 10, 13) // processed before the rollback reset it
	sluicetest.Must(t, s1.Close(stale))

	rb := c.restored(checkpoint2)
	s2 := initSink(t, f, rb)
	sluicetest.Must(t, s2.Commit(rb, 2))
	if got := committedOutput(t, out); !slices.Equal(got, numberedLines(0, 20)) {
		t.Fatalf("after the rollback to checkpoint 2 the output is %v, want lines 0-19", got)
	}
	replayAndCommit(t, s2, rb, out, 20, 30, 3)
}

func TestStdioCannotBeExactlyOnce(t *testing.T) {
	out := mustSink(t, file.SinkConfig{Name: "print", Stream: "s", Path: file.Stdio})()
	if _, ok := out.(sdk.Committer); ok {
		t.Fatal("a stdout sink claims to take part in exactly-once")
	}
	if _, ok := mustSink(t, file.SinkConfig{Name: "write", Stream: "s", Path: "out.txt"})().(sdk.Committer); !ok {
		t.Fatal("a file sink is not an sdk.Committer")
	}
	in := mustSource(t, file.SourceConfig{Name: "read", Stream: "s", Path: file.Stdio, Stdin: strings.NewReader("x\n")})()
	if _, ok := in.(sdk.Resumable); ok {
		t.Fatal("a stdin source claims to be resumable")
	}
	if _, ok := mustSource(t, file.SourceConfig{Name: "read", Stream: "s", Path: "in.txt"})().(sdk.Resumable); !ok {
		t.Fatal("a file source is not sdk.Resumable")
	}
	c := eoCtx("x", 0, 1, 0, 1, nil)
	if err := out.Init(c); !errors.Is(err, file.ErrNotResumable) {
		t.Fatalf("stdout sink Init under exactly-once: got %v, want ErrNotResumable", err)
	}
	if err := in.Init(c); !errors.Is(err, file.ErrNotResumable) {
		t.Fatalf("stdin source Init under exactly-once: got %v, want ErrNotResumable", err)
	}
}

func TestExactlyOnceSourceResumesFromTheRestoredCheckpoint(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	want := makeLines(0, 100)
	writeLines(t, in, want, os.O_TRUNC)
	f := mustSource(t, file.SourceConfig{Name: "read", Stream: "lines", Path: in, Batch: 10})
	c := eoCtx("read", 0, 1, 0, 1, nil)
	src := f().(*file.Source)
	sluicetest.Must(t, src.Init(c))
	t.Cleanup(func() { _ = src.Close(c) })
	for range 3 {
		sluicetest.Must(t, src.Poll(c))
	}
	checkpoint := c.state.snapshot()
	for range 2 {
		sluicetest.Must(t, src.Poll(c))
	}
	after := c.produced["lines"][30:]

	c1 := c.restored(checkpoint)
	r := f().(*file.Source)
	sluicetest.Must(t, r.Init(c1))
	t.Cleanup(func() { _ = r.Close(c1) })
	for range 2 {
		sluicetest.Must(t, r.Poll(c1))
	}
	got := c1.produced["lines"]
	if len(got) != len(after) {
		t.Fatalf("after the restore produced %d lines, want %d", len(got), len(after))
	}
	for i := range got {
		if string(got[i].Value) != string(after[i].Value) || string(got[i].Value) != want[30+i] {
			t.Fatalf("line %d after the restore is %.20q, want %.20q", i, got[i].Value, want[30+i])
		}
	}
}
