package connect_test

import (
	"fmt"
	"strconv"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/codec"
	"github.com/sluicehq/sluice/sdk/connect"
	"github.com/sluicehq/sluice/sdk/sdktest"
)

// lines is a bounded "external system": the source reads it from an
// index, two lines per Poll.
type lines []string

func (l lines) Read(_ sdk.Context, _ string, pos int64) ([]sdk.Record, int64, error) {
	var recs []sdk.Record
	for ; pos < int64(len(l)) && len(recs) < 2; pos++ {
		recs = append(recs, sdk.Record{Value: []byte(l[pos])})
	}
	if pos == int64(len(l)) {
		return recs, pos, sdk.ErrEndOfStream
	}
	return recs, pos, nil
}

// A resumable source: its position is in State, so a restore produces
// again exactly what followed the checkpoint.
func ExampleNewSource() {
	input := lines{"a", "b", "c", "d", "e"}
	f, err := connect.NewSource(connect.SourceConfig[int64]{
		Name: "read", Stream: "lines", Position: codec.Int64(),
		Open: func(sdk.Context) (connect.Reader[int64], error) { return input, nil },
	})
	if err != nil {
		panic(err)
	}
	h, _ := sdktest.New(f)
	_ = h.Poll()
	_ = h.Checkpoint(1) // after a and b
	_ = h.Poll()
	_ = h.Restore(1) // c and d come again
	for h.Poll() == nil {
	}
	for _, r := range h.Take("lines") {
		fmt.Print(string(r.Value), " ")
	}
	fmt.Println("finished:", h.Finished())
	// Output: a b c d c d e finished: true
}

// store is an external system with transactions: prepared ones are
// invisible until committed.
type store struct {
	prepared  map[string][]string
	committed []string
	open      []string
}

func (s *store) Begin(sdk.Context) error { s.open = nil; return nil }
func (s *store) Write(_ sdk.Context, rec sdk.Record) error {
	s.open = append(s.open, string(rec.Value))
	return nil
}
func (s *store) PreCommit(_ sdk.Context, checkpoint uint64) ([]byte, error) {
	id := "txn-" + strconv.FormatUint(checkpoint, 10)
	s.prepared[id] = s.open
	return []byte(id), nil
}
func (s *store) Commit(_ sdk.Context, t connect.Txn) error {
	s.committed = append(s.committed, s.prepared[string(t.Handle)]...) // nothing if done before
	delete(s.prepared, string(t.Handle))
	return nil
}
func (s *store) Abort(_ sdk.Context, t connect.Txn) error {
	delete(s.prepared, string(t.Handle))
	return nil
}

// A two-phase-commit sink: records become visible when their checkpoint
// completes, once, even when the instance is restored from it.
func ExampleNewSink() {
	ext := &store{prepared: map[string][]string{}}
	f, err := connect.NewSink(connect.SinkConfig{
		Name: "write", Stream: "in",
		Open: func(sdk.Context) (connect.Transactions, []byte, error) { return ext, nil, nil },
	})
	if err != nil {
		panic(err)
	}
	h, _ := sdktest.New(f)
	_ = h.Send("in", sdk.Record{Value: []byte("a")}, sdk.Record{Value: []byte("b")})
	_ = h.Checkpoint(1)
	fmt.Println("before completion:", ext.committed)
	_ = h.Complete(1)
	_ = h.Send("in", sdk.Record{Value: []byte("c")})
	_ = h.Crash(1) // c was in no checkpoint; Commit(1) again changes nothing
	_ = h.Send("in", sdk.Record{Value: []byte("c")})
	_ = h.Checkpoint(2)
	_ = h.Complete(2)
	fmt.Println("after:", ext.committed, "prepared left:", len(ext.prepared))
	// Output:
	// before completion: []
	// after: [a b c] prepared left: 0
}
