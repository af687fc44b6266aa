package bench

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/IBM/sarama"
	"github.com/lovoo/goka"
	"github.com/lovoo/goka/codec"
	"github.com/lovoo/goka/storage"
	"github.com/twmb/franz-go/pkg/kgo"
)

// GokaWordCount runs the same word count as SluiceKafkaWordCount as a Goka
// processor: input topic → count per word in the group table (LevelDB,
// mirrored to the "<group>-table" topic) → every new count to the output
// topic. Goka's defaults stay as they are except those kfake and a fresh
// run need: replication 1, and Consumer.Offsets.Initial = OffsetOldest (a
// group that starts after the input was written would otherwise read
// nothing). Each run gets a fresh storage directory (Goka's LevelDB
// otherwise outlives the broker). The emitted value carries the input
// record's timestamp, since Goka stamps its outputs with the time they are
// emitted.
func GokaWordCount(cfg KafkaWordCountConfig) (Result, error) {
	s, err := newKafkaScenario(cfg, "goka")
	if err != nil {
		return Result{}, err
	}
	defer s.close()
	dir, err := os.MkdirTemp("", "sluice-bench-goka-")
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(dir)

	out := goka.Stream(s.out)
	g := goka.DefineGroup(goka.Group(s.id),
		goka.Input(goka.Stream(s.in), new(codec.String), func(ctx goka.Context, _ any) {
			var n int64
			if v := ctx.Value(); v != nil {
				n = v.(int64)
			}
			n++
			ctx.SetValue(n)
			ctx.Emit(out, ctx.Key(), strconv.FormatInt(n, 10)+" "+strconv.FormatInt(ctx.Timestamp().UnixNano(), 10))
		}),
		goka.Output(out, new(codec.String)),
		goka.Persist(new(codec.Int64)),
	)
	sc := goka.DefaultConfig()
	sc.Consumer.Offsets.Initial = sarama.OffsetOldest
	tmc := goka.NewTopicManagerConfig()
	tmc.Table.Replication = 1
	tmc.Stream.Replication = 1
	quiet := log.New(io.Discard, "", 0)
	p, err := goka.NewProcessor(s.b.Addrs(), g,
		goka.WithStorageBuilder(storage.DefaultBuilder(dir)),
		goka.WithTopicManagerBuilder(goka.TopicManagerBuilderWithConfig(sc, tmc)),
		goka.WithConsumerGroupBuilder(goka.ConsumerGroupBuilderWithConfig(sc)),
		goka.WithConsumerSaramaBuilder(goka.SaramaConsumerBuilderWithConfig(sc)),
		goka.WithProducerBuilder(goka.ProducerBuilderWithConfig(sc)),
		goka.WithLogger(quiet),
	)
	if err != nil {
		return Result{}, fmt.Errorf("bench: goka processor: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	rctx, rcancel := context.WithTimeout(ctx, time.Minute)
	defer rcancel()
	if err := p.WaitForReadyContext(rctx); err != nil {
		return Result{}, fmt.Errorf("bench: goka processor not ready: %w", err)
	}
	return s.run(func(r *kgo.Record) (time.Time, bool) {
		_, ts, ok := strings.Cut(string(r.Value), " ")
		if !ok {
			return time.Time{}, false
		}
		ns, err := strconv.ParseInt(ts, 10, 64)
		if err != nil {
			return time.Time{}, false
		}
		return time.Unix(0, ns), true
	})
}
