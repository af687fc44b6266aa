// Command wordcount runs the word-count sample on the embedded runtime and
// prints the top words every second. It stops on Ctrl-C or after -duration.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/samples/wordcount"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
)

// printer prints every top-words record.
type printer struct{}

func (printer) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: "print", Inputs: []sdk.Input{{Stream: wordcount.TopWords}}}
}
func (printer) Init(sdk.Context) error { return nil }
func (printer) ProcessRecord(_ sdk.Context, rec sdk.Record) error {
	fmt.Printf("%s  %s\n", time.Now().Format("15:04:05"), rec.Value)
	return nil
}
func (printer) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

func main() {
	dataDir := flag.String("data", "sluice-data/wordcount", "directory of the node's state database")
	rate := flag.Float64("rate", 5000, "sentences per second")
	duration := flag.Duration("duration", 0, "stop after this long (0: until Ctrl-C)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	err := node.Run(ctx, node.Config{NodeConfig: node.NodeConfig{DataDir: *dataDir, Logger: logger}},
		wordcount.SentenceSource(*rate, 0),
		func() sdk.Operator { return wordcount.Split{} },
		func() sdk.Operator { return wordcount.Count{} },
		func() sdk.Operator { return wordcount.Top{} },
		func() sdk.Operator { return printer{} },
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, "wordcount:", err)
		os.Exit(1)
	}
}
