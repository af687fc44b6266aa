package objfile_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/sluicehq/sluice/connectors/objfile"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/objstore"
	"github.com/sluicehq/sluice/objstore/fsstore"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/sdktest"
)

// bids are the columns of the Parquet tests.
var bids = []objfile.Column{
	{Name: "auction", Type: objfile.ColumnInt64},
	{Name: "bidder", Type: objfile.ColumnString},
	{Name: "price", Type: objfile.ColumnDouble},
	{Name: "won", Type: objfile.ColumnBool, Optional: true},
	{Name: "at", Type: objfile.ColumnTimestampMillis},
}

// bid is a row of bids as the test writes and reads it.
type bid struct {
	Auction int64   `parquet:"auction" json:"auction"`
	Bidder  string  `parquet:"bidder" json:"bidder"`
	Price   float64 `parquet:"price" json:"price"`
	Won     *bool   `parquet:"won,optional" json:"won"`
	At      int64   `parquet:"at,timestamp(millisecond)" json:"at"`
}

// readParquet reads the rows of the Parquet object under key with the
// parquet library directly, as a reader of the files would.
func readParquet(t *testing.T, st objstore.Store, key string) []bid {
	t.Helper()
	r, err := st.Get(context.Background(), key)
	sluicetest.Must(t, err)
	defer r.Close()
	data, err := io.ReadAll(r)
	sluicetest.Must(t, err)
	rows, err := parquet.Read[bid](bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatalf("read %s as parquet: %v", key, err)
	}
	return rows
}

// Under exactly-once the Parquet files under final keys hold each
// committed record's row once, typed, and only committed records; after
// a crash the open transaction's rows come again and are written once.
func TestParquetFilesHoldTheCommittedRows(t *testing.T) {
	eachStore(t, func(t *testing.T, st objstore.Store) {
		h := newSink(t, objfile.SinkConfig{Store: st, Prefix: "bids/", Format: objfile.FormatParquet, Columns: bids, RollRecords: 3})
		value := func(i int) string {
			won := ""
			if i%2 == 0 {
				won = fmt.Sprintf(`,"won":%t`, i%4 == 0)
			}
			at := fmt.Sprint(1_700_000_000_000 + i)
			if i == 5 {
				at = `"2023-11-14T22:13:20.005Z"` // = 1_700_000_000_005
			}
			return fmt.Sprintf(`{"auction":%d,"bidder":"b%d","price":%d.5,"at":%s,"extra":[1]%s}`, 100+i, i, i, at, won)
		}
		sendValues := func(from, to int) {
			for i := from; i < to; i++ {
				sluicetest.Must(t, h.Send("s", sdk.Record{Value: []byte(value(i))}))
			}
		}
		sendValues(0, 7)
		sluicetest.Must(t, h.Checkpoint(1))
		sluicetest.Must(t, h.Complete(1))
		sendValues(7, 9) // lost in the crash, sent again
		sluicetest.Must(t, h.Checkpoint(2))
		sluicetest.Must(t, h.Crash(1))
		sendValues(7, 10)
		sluicetest.Must(t, h.Checkpoint(3))
		sluicetest.Must(t, h.Complete(3))

		final, pending := objects(t, st)
		if len(pending) > 0 {
			t.Errorf("pending objects left after the commits: %v", pending)
		}
		var got []bid
		for _, k := range final {
			if !strings.HasSuffix(k, ".parquet") {
				t.Errorf("final key %s does not end in .parquet", k)
			}
			got = append(got, readParquet(t, st, k)...)
		}
		slices.SortFunc(got, func(a, b bid) int { return int(a.Auction - b.Auction) })
		if len(got) != 10 {
			t.Fatalf("%d rows in the final files, want 10 (0..9 once): %+v", len(got), got)
		}
		for i, b := range got {
			var won *bool
			if i%2 == 0 {
				w := i%4 == 0
				won = &w
			}
			want := bid{Auction: int64(100 + i), Bidder: fmt.Sprintf("b%d", i), Price: float64(i) + 0.5, Won: won, At: 1_700_000_000_000 + int64(i)}
			if b.Auction != want.Auction || b.Bidder != want.Bidder || b.Price != want.Price || b.At != want.At ||
				(b.Won == nil) != (want.Won == nil) || (b.Won != nil && *b.Won != *want.Won) {
				t.Errorf("row %d = %+v, want %+v", i, b, want)
			}
		}
		if len(final) != 4 { // 3 + 3 + 1 records for checkpoint 1, 3 for checkpoint 3
			t.Errorf("%d final files, want 4 (RollRecords 3: 3+3+1, then 3): %v", len(final), final)
		}
	})
}

// A record that is not a row of the columns is refused as a bad record
// (dead-lettered by the runtime) and nothing of it is written; the
// records around it are.
func TestParquetRefusesRecordsThatAreNotRows(t *testing.T) {
	st := dirStore(t)
	h := newSink(t, objfile.SinkConfig{Store: st, Format: objfile.FormatParquet, Columns: bids})
	good := `{"auction":1,"bidder":"a","price":1,"at":5}`
	for _, tc := range []struct{ value, want string }{
		{`not json`, "not a JSON object"},
		{`[1,2]`, "not a JSON object"},
		{`{"bidder":"a","price":1,"at":5}`, `"auction" is required`},
		{`{"auction":1.5,"bidder":"a","price":1,"at":5}`, `"auction": want an integer`},
		{`{"auction":1,"bidder":7,"price":1,"at":5}`, `"bidder": want a string`},
		{`{"auction":1,"bidder":"a","price":"x","at":5}`, `"price": want a number`},
		{`{"auction":1,"bidder":"a","price":1,"won":"yes","at":5}`, `"won": want true or false`},
		{`{"auction":1,"bidder":"a","price":1,"at":"yesterday"}`, `"at": want milliseconds or an RFC 3339 time`},
	} {
		sluicetest.Must(t, h.Send("s", sdk.Record{Value: []byte(good)}))
		err := h.Send("s", sdk.Record{Value: []byte(tc.value)})
		if !errors.Is(err, sdk.ErrBadRecord) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("record %s: got %v, want a bad record naming %s", tc.value, err, tc.want)
		}
	}
	sluicetest.Must(t, h.Checkpoint(1))
	sluicetest.Must(t, h.Complete(1))
	final, _ := objects(t, st)
	var rows int
	for _, k := range final {
		for _, b := range readParquet(t, st, k) {
			if b.Auction != 1 || b.Bidder != "a" {
				t.Errorf("a row of a refused record was written: %+v", b)
			}
			rows++
		}
	}
	if rows != 8 {
		t.Errorf("%d rows written, want the 8 good records", rows)
	}
}

// dirStore returns a store on a fresh directory.
func dirStore(t *testing.T) objstore.Store {
	t.Helper()
	st, err := fsstore.Open(t.TempDir())
	sluicetest.Must(t, err)
	return st
}

// The bounded source reads a Parquet sink's committed files back as JSON
// objects, one record per row.
func TestSourceReadsParquetRowsAsJSON(t *testing.T) {
	st := dirStore(t)
	sink := newSink(t, objfile.SinkConfig{Store: st, Prefix: "p/", Format: objfile.FormatParquet, Columns: bids, RollRecords: 2})
	var want []string
	for i := range 5 {
		v := fmt.Sprintf(`{"at":%d,"auction":%d,"bidder":"b","price":2.25,"won":null}`, 1000+i, i)
		want = append(want, v)
		sluicetest.Must(t, sink.Send("s", sdk.Record{Value: []byte(v)}))
	}
	sluicetest.Must(t, sink.Checkpoint(1))
	sluicetest.Must(t, sink.Complete(1))
	f, err := objfile.NewSource(objfile.SourceConfig{Name: "read", Stream: "out", Store: st, Prefix: "p/"})
	sluicetest.Must(t, err)
	h, err := sdktest.New(f)
	sluicetest.Must(t, err)
	t.Cleanup(func() { _ = h.Close() })
	pollToEnd(t, h, 10)
	got := values(h)
	for i, v := range got { // canonical JSON: keys sorted, as want's
		var m map[string]any
		sluicetest.Must(t, json.Unmarshal([]byte(v), &m))
		b, _ := json.Marshal(m)
		got[i] = string(b)
	}
	if !slices.Equal(got, want) {
		t.Errorf("read back %v, want %v", got, want)
	}
}
