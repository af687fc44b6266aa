// Command kafka-wordcount runs the Kafka word count sample as a Sluice
// node (embedded, or one node of a cluster with -consul), or writes words
// to Kafka as a load generator.
//
//	kafka-wordcount -brokers 127.0.0.1:9092                      # a node, embedded
//	kafka-wordcount -brokers … -consul 127.0.0.1:8500 -id n1 …   # a cluster node
//	kafka-wordcount produce -brokers … -n 1000000                # write 1 M words
//
// Every flag can also be given in the environment, so that a launcher can
// configure a node without knowing its flags: SLUICE_KAFKA_BROKERS,
// SLUICE_KAFKA_INPUT, SLUICE_KAFKA_OUTPUT, SLUICE_KAFKA_DLQ, SLUICE_KAFKA_GROUP,
// SLUICE_KAFKA_STATE_PREFIX; SLUICE_NODE_ID, SLUICE_DATA_DIR, SLUICE_CONSUL,
// SLUICE_CLUSTER, SLUICE_HTTP, SLUICE_BIND, SLUICE_HOST.
//
// The node hosts the kinds kafka-source, count, kafka-sink and kafka-dlq
// and deploys them on first start unless -host-only is given; a manifest
// can then deploy or scale them (see docs/kafka.md).
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

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/connectors/kafka"
	kafkawordcount "github.com/sluicehq/sluice/samples/kafka-wordcount"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
)

func main() {
	var err error
	if len(os.Args) > 1 && os.Args[1] == "produce" {
		err = produce(os.Args[2:])
	} else {
		err = runNode(os.Args[1:])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kafka-wordcount:", err)
		os.Exit(1)
	}
}

// runNode runs a Sluice node with the sample's operators until SIGINT or
// SIGTERM (a graceful leave).
func runNode(args []string) error {
	fs := flag.NewFlagSet("kafka-wordcount", flag.ExitOnError)
	var cfg node.Config
	wc := kafkawordcount.DefaultConfig()
	cfg.DataDir = "sluice-data/kafka-wordcount"
	cfg.RegisterNodeFlags(fs, os.Getenv) // -id, -data, -consul, -http, -host, -host-only…: $SLUICE_* (package nodeenv)
	brokers := fs.String("brokers", os.Getenv("SLUICE_KAFKA_BROKERS"), "comma-separated Kafka brokers ($SLUICE_KAFKA_BROKERS); required")
	fs.StringVar(&wc.Input, "input", envOr("SLUICE_KAFKA_INPUT", wc.Input), "topic of words ($SLUICE_KAFKA_INPUT)")
	fs.StringVar(&wc.Output, "output", envOr("SLUICE_KAFKA_OUTPUT", wc.Output), "topic of counts ($SLUICE_KAFKA_OUTPUT)")
	fs.StringVar(&wc.DeadLetters, "dlq", envOr("SLUICE_KAFKA_DLQ", wc.DeadLetters), "topic of dead letters ($SLUICE_KAFKA_DLQ)")
	fs.StringVar(&wc.Group, "group", envOr("SLUICE_KAFKA_GROUP", wc.Group), "consumer group of the committed offsets ($SLUICE_KAFKA_GROUP)")
	fs.IntVar(&wc.SourceParallelism, "source-parallelism", wc.SourceParallelism, "source instances")
	fs.IntVar(&wc.CountParallelism, "count-parallelism", wc.CountParallelism, "counter instances")
	fs.IntVar(&wc.SinkParallelism, "sink-parallelism", wc.SinkParallelism, "sink instances")
	if err := cfg.RegisterGuaranteeFlags(fs, os.Getenv); err != nil { // exactly-once: checkpoints, Kafka transactions
		return err
	}
	statePrefix := fs.String("state-prefix", envOr("SLUICE_KAFKA_STATE_PREFIX", "kafka-wordcount"), "at least once: changelog topics' prefix for operator state ($SLUICE_KAFKA_STATE_PREFIX); \"none\": no state log")
	level := fs.String("log-level", "info", "log level")
	var sec node.ControlSecurity // -control-*, $SLUICE_CONTROL_*: who may use the control API (docs/security.md)
	if err := sec.RegisterFlags(fs, os.Getenv); err != nil {
		return err
	}
	var nodeSec node.NodeSecurity // -node-*, $SLUICE_NODE_*: mutual TLS between nodes (docs/security.md)
	nodeSec.RegisterFlags(fs, os.Getenv)
	_ = fs.Parse(args)
	cfg.ControlSecurity, cfg.NodeSecurity = &sec, &nodeSec

	wc.Brokers = kafka.ParseBrokers(*brokers)
	if len(wc.Brokers) == 0 {
		return fmt.Errorf("-brokers (or $SLUICE_KAFKA_BROKERS) is required")
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*level)); err != nil {
		return fmt.Errorf("-log-level: %w", err)
	}
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lv}))
	g := cfg.Guarantee
	if g == sdk.NoGuarantee {
		wc.Commit = kafka.CommitProduced
	}
	if g == sdk.AtLeastOnce && *statePrefix != "none" {
		sl, err := kafka.NewStateLog(kafka.StateLogConfig{Brokers: wc.Brokers, Prefix: *statePrefix})
		if err != nil {
			return err
		}
		defer sl.Close() // after the runtime has stopped
		cfg.StateLog = sl
	}
	ops, err := kafkawordcount.Operators(wc)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rt, err := node.Start(ctx, cfg, ops...)
	if err != nil {
		return err
	}
	// The test harness waits for this line.
	fmt.Printf("ready http=%s\n", rt.HTTPAddr())
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return rt.Stop(sctx)
}

// produce writes a deterministic load of words (see kafkawordcount.Load).
func produce(args []string) error {
	fs := flag.NewFlagSet("kafka-wordcount produce", flag.ExitOnError)
	brokers := fs.String("brokers", os.Getenv("SLUICE_KAFKA_BROKERS"), "comma-separated Kafka brokers ($SLUICE_KAFKA_BROKERS); required")
	topic := fs.String("topic", envOr("SLUICE_KAFKA_INPUT", "words"), "topic to write words to")
	n := fs.Int64("n", 1_000_000, "records to write")
	from := fs.Int64("from", 0, "first record number (a run writes records [from, n))")
	vocabulary := fs.Int("vocabulary", 5000, "distinct words")
	poison := fs.Int64("poison-every", 0, "make every N-th record not a word (0: none)")
	rate := fs.Float64("rate", 0, "records per second (0: as fast as possible)")
	_ = fs.Parse(args)
	bs := kafka.ParseBrokers(*brokers)
	if len(bs) == 0 {
		return fmt.Errorf("produce: -brokers is required")
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(bs...), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	load := kafkawordcount.Load{Records: *n, Vocabulary: *vocabulary, PoisonEvery: *poison}
	start := time.Now()
	if err := load.Produce(ctx, cl, *topic, *from, *n, *rate); err != nil {
		return err
	}
	fmt.Printf("produced %d records in %v\n", *n-*from, time.Since(start).Round(time.Millisecond))
	return nil
}

// envOr returns $name, or def when it is empty.
func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
