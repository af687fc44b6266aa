package connect_test

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/codec"
	"github.com/sluicehq/sluice/sdk/connect"
	"github.com/sluicehq/sluice/sdk/sdktest"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// partitions is a bounded system of four splits p0..p3 of 10 records
// each, three per Read.
type partitions struct{}

func (partitions) Read(_ sdk.Context, split string, pos int64) ([]sdk.Record, int64, error) {
	var recs []sdk.Record
	for ; pos < 10 && len(recs) < 3; pos++ {
		recs = append(recs, sdk.Record{Value: []byte(split + "/" + strconv.FormatInt(pos, 10))})
	}
	if pos == 10 {
		return recs, pos, sdk.ErrEndOfStream
	}
	return recs, pos, nil
}

func splitSource(t *testing.T, par int) sdk.Factory {
	f, err := connect.NewSource(connect.SourceConfig[int64]{
		Name: "read", Stream: "s", Parallelism: par, KeyGroups: 4, Position: codec.Int64(),
		Splits: connect.Spread("p0", "p1", "p2", "p3"),
		Open:   func(sdk.Context) (connect.Reader[int64], error) { return partitions{}, nil },
	})
	must(t, err)
	return f
}

func values(recs []sdk.Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, string(r.Value))
	}
	return out
}

// Splits spread over two instances, checkpointed, restored into one
// instance (a rescale): every record of every split once, after the
// checkpoint exactly what followed it.
func TestSourceSplitsRescaleAndEnd(t *testing.T) {
	f := splitSource(t, 2)
	h0, err := sdktest.New(f)
	must(t, err)
	h1, err := sdktest.New(f, sdktest.WithInstance(1))
	must(t, err)
	must(t, h0.Poll())
	must(t, h1.Poll())
	must(t, h1.Poll())
	if got := values(h0.Output("s")); !slices.Equal(got, []string{"p0/0", "p0/1", "p0/2", "p2/0", "p2/1", "p2/2"}) {
		t.Fatalf("instance 0 read %v, want p0 and p2", got)
	}
	must(t, h0.Checkpoint(1))
	must(t, h1.Checkpoint(1))
	before := append(values(h0.Take("s")), values(h1.Take("s"))...)
	must(t, h0.Poll()) // after the checkpoint: lost in the rescale, read again
	s0, _ := h0.Snapshot(1)
	s1, _ := h1.Snapshot(1)
	one, err := sdktest.New(f, sdktest.WithParallelism(1), sdktest.WithSnapshot(s0, s1))
	must(t, err)
	polls := 0
	for {
		err := one.Poll()
		if errors.Is(err, sdk.ErrEndOfStream) {
			break
		}
		must(t, err)
		if polls++; polls > 20 {
			t.Fatal("the source did not end")
		}
	}
	all := append(before, values(one.Take("s"))...)
	slices.Sort(all)
	var want []string
	for _, p := range []string{"p0", "p1", "p2", "p3"} {
		for i := range 10 {
			want = append(want, p+"/"+strconv.Itoa(i))
		}
	}
	slices.Sort(want)
	if !slices.Equal(all, want) {
		t.Fatalf("records over the rescale: got %v, want each of %v once", all, want)
	}
}

// A Poll that fails keeps neither its records nor its position; a Reader
// error names the split.
func TestSourceFailedPollKeepsNoPosition(t *testing.T) {
	fail := true
	f, err := connect.NewSource(connect.SourceConfig[int64]{
		Name: "read", Stream: "s", Position: codec.Int64(),
		Open: func(sdk.Context) (connect.Reader[int64], error) {
			return readerFunc(func(pos int64) ([]sdk.Record, int64, error) {
				if pos == 1 && fail {
					return nil, pos, errors.New("broken")
				}
				return []sdk.Record{{Value: []byte(strconv.FormatInt(pos, 10))}}, pos + 1, nil
			}), nil
		},
	})
	must(t, err)
	h, err := sdktest.New(f)
	must(t, err)
	must(t, h.Poll())
	if err := h.Poll(); err == nil || !strings.Contains(err.Error(), `split ""`) {
		t.Fatalf("failing Poll: got %v, want the reader's error naming the split", err)
	}
	fail = false
	must(t, h.Poll())
	if got := values(h.Take("s")); !slices.Equal(got, []string{"0", "1"}) {
		t.Fatalf("records: got %v, want [0 1]", got)
	}
	if h.Restarts() != 1 {
		t.Fatalf("restarts: got %d, want 1", h.Restarts())
	}
}

type readerFunc func(pos int64) ([]sdk.Record, int64, error)

func (f readerFunc) Read(_ sdk.Context, _ string, pos int64) ([]sdk.Record, int64, error) {
	return f(pos)
}

func TestConfigsRefused(t *testing.T) {
	if _, err := connect.NewSource(connect.SourceConfig[int64]{Name: "r", Stream: "s"}); !errors.Is(err, connect.ErrConfig) {
		t.Fatalf("a source without Position and Open: got %v, want ErrConfig", err)
	}
	if _, err := connect.NewSink(connect.SinkConfig{Name: "w"}); !errors.Is(err, connect.ErrConfig) {
		t.Fatalf("a sink without Stream and Open: got %v, want ErrConfig", err)
	}
}

// journal is a Recoverer over an in-memory system whose prepared
// transactions survive a crash, as files or broker transactions do.
type journal struct {
	prepared  map[string][]string // handle → records
	committed []string
	open      map[string][]string // writer → records
	calls     []string
}

func newJournal() *journal {
	return &journal{prepared: map[string][]string{}, open: map[string][]string{}}
}

func writer(ctx sdk.Context) string {
	return connect.WriterName(ctx.Instance().Operator, ctx.Instance().FirstGroup)
}

func (j *journal) Begin(ctx sdk.Context) error { j.open[writer(ctx)] = nil; return nil }
func (j *journal) Write(ctx sdk.Context, rec sdk.Record) error {
	j.open[writer(ctx)] = append(j.open[writer(ctx)], string(rec.Value))
	return nil
}
func (j *journal) PreCommit(ctx sdk.Context, checkpoint uint64) ([]byte, error) {
	h := fmt.Sprintf("%s/%d", writer(ctx), checkpoint)
	j.prepared[h] = j.open[writer(ctx)]
	return []byte(h), nil
}
func (j *journal) Commit(_ sdk.Context, t connect.Txn) error {
	j.calls = append(j.calls, "commit "+string(t.Handle))
	j.committed = append(j.committed, j.prepared[string(t.Handle)]...)
	delete(j.prepared, string(t.Handle))
	return nil
}
func (j *journal) Abort(_ sdk.Context, t connect.Txn) error {
	j.calls = append(j.calls, "abort "+string(t.Handle))
	delete(j.prepared, string(t.Handle))
	return nil
}
func (j *journal) Recover(_ sdk.Context, writer string, scope []byte) ([]connect.Txn, error) {
	j.calls = append(j.calls, "recover "+writer+" "+string(scope))
	var out []connect.Txn
	for h := range j.prepared {
		w, n, _ := strings.Cut(h, "/")
		if w == writer {
			id, _ := strconv.ParseUint(n, 10, 64)
			out = append(out, connect.Txn{Writer: w, Checkpoint: id, Handle: []byte(h)})
		}
	}
	return out, nil
}

func journalSink(t *testing.T, j *journal, par int) sdk.Factory {
	f, err := connect.NewSink(connect.SinkConfig{Name: "write", Stream: "in", Parallelism: par, KeyGroups: 4,
		Open: func(sdk.Context) (connect.Transactions, []byte, error) { return j, []byte("scope"), nil }})
	must(t, err)
	return f
}

func sendAll(t *testing.T, h *sdktest.Harness, vals ...string) {
	t.Helper()
	for _, v := range vals {
		must(t, h.Send("in", sdk.Record{Value: []byte(v)}))
	}
}

// Checkpoint 2 completed without this node hearing of it: a crash first
// restores checkpoint 1 (the node's base), then the rollback restores 2.
// The transaction of 2 must survive the first restore (an orphan then),
// and be committed by the second; a transaction no checkpoint lists is
// aborted once a newer checkpoint completes.
func TestSinkOrphansWaitForANewerCheckpoint(t *testing.T) {
	j := newJournal()
	h, err := sdktest.New(journalSink(t, j, 1))
	must(t, err)
	sendAll(t, h, "a")
	must(t, h.Checkpoint(1))
	must(t, h.Checkpoint(2)) // nothing written: no transaction
	sendAll(t, h, "b")
	must(t, h.Checkpoint(3))
	must(t, h.Complete(1))
	sendAll(t, h, "c")
	must(t, h.Checkpoint(4)) // never completes
	if !slices.Equal(j.committed, []string{"a"}) {
		t.Fatalf("committed %v, want [a]", j.committed)
	}
	j.calls = nil
	must(t, h.Crash(1))
	if want := []string{"recover write-00000 scope", "commit write-00000/1"}; !slices.Equal(j.calls, want) {
		t.Fatalf("calls of the restore to 1: got %v, want %v", j.calls, want)
	}
	if len(j.prepared) != 2 {
		t.Fatalf("after the restore to 1 prepared %v, want 3's and 4's kept (orphans)", j.prepared)
	}
	j.calls = nil
	must(t, h.Crash(3)) // 3 had completed unannounced
	if !slices.Equal(j.committed, []string{"a", "b"}) {
		t.Fatalf("after the restore to 3 committed %v, want [a b]", j.committed)
	}
	if _, ok := j.prepared["write-00000/4"]; !ok {
		t.Fatal("checkpoint 4's transaction was aborted before a newer checkpoint completed")
	}
	sendAll(t, h, "c")
	must(t, h.Checkpoint(5))
	must(t, h.Complete(5))
	if !slices.Equal(j.committed, []string{"a", "b", "c"}) || len(j.prepared) != 0 {
		t.Fatalf("after checkpoint 5 committed %v, prepared %v; want [a b c] and none", j.committed, j.prepared)
	}
	if !slices.Contains(j.calls, "abort write-00000/4") {
		t.Fatalf("checkpoint 4's orphan was not aborted: calls %v", j.calls)
	}
	for _, e := range h.State() {
		if strings.Contains(string(e.Key), "txn/") {
			t.Fatalf("state still lists %s", e.Key)
		}
	}
}

// Two instances checkpointed and restored into one: it recovers both
// writers and commits both instances' transactions.
func TestSinkRescaleCommitsBothWriters(t *testing.T) {
	j := newJournal()
	f := journalSink(t, j, 2)
	h0, err := sdktest.New(f)
	must(t, err)
	h1, err := sdktest.New(f, sdktest.WithInstance(1))
	must(t, err)
	sendAll(t, h0, "a")
	sendAll(t, h1, "b")
	must(t, h0.Checkpoint(1))
	must(t, h1.Checkpoint(1))
	sendAll(t, h1, "late")
	must(t, h1.Checkpoint(2)) // never completes
	s0, _ := h0.Snapshot(1)
	s1, _ := h1.Snapshot(1)
	j.calls = nil
	one, err := sdktest.New(f, sdktest.WithParallelism(1), sdktest.WithSnapshot(s0, s1))
	must(t, err)
	want := []string{"recover write-00000 scope", "recover write-00002 scope", "commit write-00000/1", "commit write-00002/1"}
	if !slices.Equal(j.calls, want) {
		t.Fatalf("calls: got %v, want %v", j.calls, want)
	}
	sendAll(t, one, "c")
	must(t, one.Checkpoint(3))
	must(t, one.Complete(3))
	if !slices.Equal(j.committed, []string{"a", "b", "c"}) || len(j.prepared) != 0 {
		t.Fatalf("committed %v, prepared %v; want [a b c] and the old instance 1's checkpoint 2 aborted", j.committed, j.prepared)
	}
}

// Without exactly-once a Flush prepares and commits at once.
func TestSinkFlushCommitsWithoutExactlyOnce(t *testing.T) {
	j := newJournal()
	h, err := sdktest.New(journalSink(t, j, 1), sdktest.WithGuarantee(sdk.AtLeastOnce))
	must(t, err)
	sendAll(t, h, "a", "b")
	if len(j.committed) != 0 {
		t.Fatalf("committed before a flush: %v", j.committed)
	}
	must(t, h.Flush())
	must(t, h.Flush()) // nothing open: nothing to do
	if !slices.Equal(j.committed, []string{"a", "b"}) || len(j.prepared) != 0 {
		t.Fatalf("after Flush committed %v, prepared %v", j.committed, j.prepared)
	}
	for _, e := range h.State() {
		t.Fatalf("state written without exactly-once: %s", e.Key)
	}
}
