package node_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
)

// Counter counts records per key and emits the running count.
type Counter struct{}

func (Counter) Metadata() sdk.Metadata {
	return sdk.Metadata{
		Name:        "count",
		Inputs:      []sdk.Input{{Stream: "words", Routing: sdk.GroupBy}},
		Outputs:     []string{"counts"},
		Parallelism: 4,
	}
}

func (Counter) Init(sdk.Context) error { return nil }

func (Counter) ProcessRecord(ctx sdk.Context, rec sdk.Record) error {
	n, err := sdk.GetInt64(ctx.State(), rec.Key) // 0 if absent
	if err != nil {
		return err
	}
	sdk.PutInt64(ctx.State(), rec.Key, n+1)
	return ctx.Produce("counts", sdk.Record{Key: rec.Key, Value: fmt.Appendf(nil, "%d", n+1)})
}

func (Counter) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

// Printer prints what it receives and signals after each record.
type Printer struct{ got chan<- struct{} }

func (Printer) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: "print", Inputs: []sdk.Input{{Stream: "counts"}}}
}
func (Printer) Init(sdk.Context) error { return nil }
func (p Printer) ProcessRecord(_ sdk.Context, rec sdk.Record) error {
	fmt.Printf("%s=%s\n", rec.Key, rec.Value)
	p.got <- struct{}{}
	return nil
}
func (Printer) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

func Example() {
	dir, _ := os.MkdirTemp("", "sluice-example-")
	defer os.RemoveAll(dir)
	got := make(chan struct{}, 3)

	ctx := context.Background()
	rt, err := node.Start(ctx, node.Config{NodeConfig: node.NodeConfig{DataDir: dir}},
		func() sdk.Operator { return Counter{} },
		func() sdk.Operator { return Printer{got} },
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, w := range []string{"to", "be", "to"} {
		if err := rt.Produce(ctx, "words", sdk.Record{Key: []byte(w)}); err != nil {
			fmt.Println(err)
		}
	}
	for range 3 {
		<-got
	}
	if err := rt.Stop(ctx); err != nil {
		fmt.Println(err)
	}
	// Unordered output:
	// to=1
	// be=1
	// to=2
}
