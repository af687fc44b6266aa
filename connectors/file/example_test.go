package file_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/sluicehq/sluice/connectors/file"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
)

// A sink writing key-value lines to stdout, fed from outside the runtime.
// Standard output cannot take back what it printed, so it cannot take part
// in exactly-once: the pipeline runs at least once.
func ExampleNewSink() {
	dir, err := os.MkdirTemp("", "sluice-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	sink, err := file.NewSink(file.SinkConfig{Name: "print", Stream: "greetings", Path: "-", Format: file.FormatKeyValue})
	if err != nil {
		fmt.Println(err)
		return
	}
	rt, err := node.Start(context.Background(), node.Config{NodeConfig: node.NodeConfig{DataDir: dir, NoSync: true, Logger: slog.New(slog.DiscardHandler)}, Guarantee: sdk.AtLeastOnce}, sink)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, who := range []string{"ada", "grace", "barbara"} {
		_ = rt.Produce(context.Background(), "greetings", sdk.Record{Key: []byte(who), Value: []byte("hello, " + who)})
	}
	_ = rt.Stop(context.Background()) // closes the sink, which writes its buffer
	// Output:
	// ada	hello, ada
	// grace	hello, grace
	// barbara	hello, barbara
}

// A source's configuration errors name the field.
func ExampleNewSource() {
	_, err := file.NewSource(file.SourceConfig{Name: "read", Stream: "lines"})
	fmt.Println(err)
	// Output:
	// file source "read": Path: is required: give a file name, or "-" for stdin
}
