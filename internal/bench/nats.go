package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	sn "github.com/sluicehq/sluice/connectors/nats"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
)

// NATSConfig sizes the NATS JetStream count scenario: Records messages
// over Keys subjects ("<in>.k<i mod Keys>") published to a fresh input
// stream before the clock starts, counted per subject, each count
// published to a fresh output stream.
type NATSConfig struct {
	URL     string // a nats-server with JetStream
	Records int
	Keys    int
	// Dir holds the Sluice run's data and checkpoints.
	Dir string
}

// natsTimeout bounds one run.
const natsTimeout = 5 * time.Minute

// natsRun is one run's streams, filled before the clock starts.
type natsRun struct {
	nc      *natsgo.Conn
	js      jetstream.JetStream
	in, out string // stream names; subjects "<name>.>"
}

// prepareNATS creates the run's streams (file storage, as in
// production) and publishes the input.
func prepareNATS(cfg NATSConfig, run string) (*natsRun, error) {
	nc, err := natsgo.Connect(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", cfg.URL, err)
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4096))
	if err != nil {
		nc.Close()
		return nil, err
	}
	r := &natsRun{nc: nc, js: js, in: run + "_in", out: run + "_out"}
	ctx, cancel := context.WithTimeout(context.Background(), natsTimeout)
	defer cancel()
	for _, s := range []string{r.in, r.out} {
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: s, Subjects: []string{s + ".>"}, Storage: jetstream.FileStorage, Duplicates: 10 * time.Minute}); err != nil {
			r.close()
			return nil, fmt.Errorf("create stream %s: %w", s, err)
		}
	}
	for i := 0; i < cfg.Records; i++ {
		if _, err := js.PublishAsync(r.in+".k"+strconv.Itoa(i%cfg.Keys), []byte(strconv.Itoa(i))); err != nil {
			r.close()
			return nil, fmt.Errorf("publish the input: %w", err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		r.close()
		return nil, errors.New("publish the input: no acks")
	}
	return r, nil
}

// close deletes the run's streams and closes the connection.
func (r *natsRun) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = r.js.DeleteStream(ctx, r.in)
	_ = r.js.DeleteStream(ctx, r.out)
	r.nc.Close()
}

// outMsgs returns the messages in the output stream.
func (r *natsRun) outMsgs(ctx context.Context) (uint64, error) {
	st, err := r.js.Stream(ctx, r.out)
	if err != nil {
		return 0, err
	}
	return st.CachedInfo().State.Msgs, nil
}

// RawNATSCount is the baseline: one nats.go ordered consumer reading the
// input, a map counting per subject, and an async publisher writing each
// count, until every count is acknowledged. No state survives a crash.
// With msgIDs each count carries a Nats-Msg-Id, as the exactly-once
// sink's do, so that the server de-duplicates (and pays for it) alike.
func RawNATSCount(cfg NATSConfig, run string, msgIDs bool) (Result, error) {
	r, err := prepareNATS(cfg, run)
	if err != nil {
		return Result{}, err
	}
	defer r.close()
	ctx, cancel := context.WithTimeout(context.Background(), natsTimeout)
	defer cancel()
	start := time.Now()
	cons, err := r.js.OrderedConsumer(ctx, r.in, jetstream.OrderedConsumerConfig{})
	if err != nil {
		return Result{}, err
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(4096))
	if err != nil {
		return Result{}, err
	}
	defer it.Stop()
	counts := make(map[string]int64, cfg.Keys)
	for range cfg.Records {
		m, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			return Result{}, fmt.Errorf("read: %w", err)
		}
		counts[m.Subject()]++
		out := &natsgo.Msg{Subject: r.out + "." + m.Subject(), Data: strconv.AppendInt(nil, counts[m.Subject()], 10)}
		if msgIDs {
			out.Header = natsgo.Header{jetstream.MsgIDHeader: {m.Subject() + "/" + strconv.FormatInt(counts[m.Subject()], 10)}}
		}
		for {
			_, err := r.js.PublishMsgAsync(out)
			if errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
				<-r.js.PublishAsyncComplete() // the server is behind: wait for its acks
				continue
			}
			if err != nil {
				return Result{}, fmt.Errorf("publish: %w", err)
			}
			break
		}
	}
	select {
	case <-r.js.PublishAsyncComplete():
	case <-ctx.Done():
		return Result{}, errors.New("publish: no acks")
	}
	return Result{Ops: int64(cfg.Records), Elapsed: time.Since(start)}, nil
}

// natsCounter counts records per key (group-by) and produces each count.
type natsCounter struct{}

func (natsCounter) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: "count", Inputs: []sdk.Input{{Stream: "words", Routing: sdk.GroupBy}}, Outputs: []string{"counts"}}
}
func (natsCounter) Init(sdk.Context) error { return nil }
func (natsCounter) ProcessRecord(ctx sdk.Context, rec sdk.Record) error {
	n, err := sdk.GetInt64(ctx.State(), rec.Key)
	if err != nil {
		return err
	}
	n++
	sdk.PutInt64(ctx.State(), rec.Key, n)
	return ctx.Produce("counts", sdk.Record{Key: rec.Key, Value: strconv.AppendInt(nil, n, 10)})
}
func (natsCounter) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

// SluiceNATSCountEO runs the same count on the embedded runtime,
// exactly-once (checkpoints every second to a directory): the NATS
// source (bounded) → a group-by counter in Pebble → the NATS sink,
// publishing each checkpoint's counts at its commit with message ids.
// The clock runs from Start to the last count in the output stream.
func SluiceNATSCountEO(cfg NATSConfig, run string) (Result, error) {
	r, err := prepareNATS(cfg, run)
	if err != nil {
		return Result{}, err
	}
	defer r.close()
	conn := sn.Connection{URL: cfg.URL}
	src, err := sn.NewSource(sn.SourceConfig{Name: "src", Output: "words", Connection: conn, Stream: r.in, Bounded: true})
	if err != nil {
		return Result{}, err
	}
	sink, err := sn.NewSink(sn.SinkConfig{Name: "sink", Inputs: []sdk.Input{{Stream: "counts"}}, Connection: conn,
		Subject: r.out, SubjectFromKey: true, Stream: r.out})
	if err != nil {
		return Result{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), natsTimeout)
	defer cancel()
	dir := filepath.Join(cfg.Dir, run)
	start := time.Now()
	rt, err := node.Start(ctx, node.Config{NodeConfig: node.NodeConfig{NodeID: "bench", DataDir: filepath.Join(dir, "data"), NoSync: true, Logger: slog.New(slog.DiscardHandler)},
		Guarantee: sdk.ExactlyOnce, Checkpoints: filepath.Join(dir, "checkpoints"), KeepRunning: true},
		src, func() sdk.Operator { return natsCounter{} }, sink)
	if err != nil {
		return Result{}, err
	}
	defer rt.Stop(context.Background())
	for {
		n, err := r.outMsgs(ctx)
		if err != nil {
			return Result{}, err
		}
		if n >= uint64(cfg.Records) {
			break
		}
		select {
		case <-ctx.Done():
			return Result{}, fmt.Errorf("%d of %d counts after %v", n, cfg.Records, natsTimeout)
		case <-time.After(5 * time.Millisecond): // polling the stream's size
		}
	}
	return Result{Ops: int64(cfg.Records), Elapsed: time.Since(start)}, nil
}

// natsRows compares SluiceNATSCountEO with RawNATSCount, alternating.
func (t *tabler) natsRows() ([]row, error) {
	if t.cfg.NATSURL == "" {
		return nil, errors.New("no nats-server (TableConfig.NATSURL)")
	}
	cfg := NATSConfig{URL: t.cfg.NATSURL, Records: t.cfg.NATSRecords, Keys: 1000, Dir: t.cfg.TempDir}
	if cfg.Records == 0 {
		cfg.Records = 200_000
	}
	runs := 0
	raw, eo, err := t.alternate([2]string{"raw nats.go consume → count → publish", "sluice NATS → count → NATS, exactly-once"}, t.cfg.Runs, true,
		func(sluice bool) (Result, error) {
			runs++
			name := "bench" + strconv.Itoa(runs)
			if sluice {
				return SluiceNATSCountEO(cfg, name)
			}
			return RawNATSCount(cfg, name, false)
		}, nil)
	if err != nil {
		return nil, err
	}
	withIDs, err := t.measure("raw nats.go consume → count → publish with Nats-Msg-Id", func() (Result, error) {
		runs++
		return RawNATSCount(cfg, "bench"+strconv.Itoa(runs), true)
	})
	if err != nil {
		return nil, err
	}
	base, rate, idRate := medianRate(raw), medianRate(eo), medianRate(withIDs)
	return []row{
		{"raw nats.go consumer → count → async publisher (baseline)", human(base), "records/s", "1.00×",
			fmt.Sprintf("%d messages over %d subjects, file streams, one nats-server v2.15.3 on loopback; %s", cfg.Records, cfg.Keys, rateRange(raw))},
		{"  the same loop, each count with a Nats-Msg-Id", human(idRate), "records/s", fmt.Sprintf("%.2f×", idRate/base),
			fmt.Sprintf("what the server's de-duplication costs by itself; %s", rateRange(withIDs))},
		{"NATS JetStream → count → NATS, exactly-once", human(rate), "records/s", fmt.Sprintf("%.2f×", rate/base),
			fmt.Sprintf("connectors/nats, group-by counter in Pebble, checkpoints every 1 s, publish on commit with Nats-Msg-Id; target ≥ 0.7×; %.2f× the loop with ids; %s; %s", rate/idRate, rateRange(eo), pairRange(raw, eo))},
	}, nil
}
