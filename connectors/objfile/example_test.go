package objfile_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/sluicehq/sluice/connectors/objfile"
	"github.com/sluicehq/sluice/objstore/fsstore"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/sdktest"
)

// A sink partitioned by event-time hour, driven through one checkpoint:
// the files appear under their final keys when the checkpoint completes.
func ExampleNewSink() {
	dir, err := os.MkdirTemp("", "objfile-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	st, err := fsstore.Open(dir)
	if err != nil {
		panic(err)
	}
	f, err := objfile.NewSink(objfile.SinkConfig{
		Name: "archive", Stream: "clicks", Store: st, Prefix: "clicks/",
		Partition: objfile.PartitionEventHour,
	})
	if err != nil {
		panic(err)
	}
	h, err := sdktest.New(f) // exactly-once
	if err != nil {
		panic(err)
	}
	defer h.Close()
	at := time.Date(2026, 12, 7, 11, 30, 0, 0, time.UTC)
	for i, v := range []string{`{"page":"/"}`, `{"page":"/docs"}`} {
		if err := h.Send("clicks", sdk.Record{Value: []byte(v), EventTime: at.Add(time.Duration(i) * time.Hour)}); err != nil {
			panic(err)
		}
	}
	if err := h.Checkpoint(1); err != nil {
		panic(err)
	}
	if err := h.Complete(1); err != nil {
		panic(err)
	}
	objs, err := st.List(context.Background(), "clicks/dt=")
	if err != nil {
		panic(err)
	}
	for _, o := range objs {
		fmt.Println(o.Key)
	}
	// Output:
	// clicks/dt=2026-12-07/hr=11/archive-00000-00000000000000000001-000000.jsonl
	// clicks/dt=2026-12-07/hr=12/archive-00000-00000000000000000001-000001.jsonl
}
