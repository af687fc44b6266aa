package kafka_test

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/connectors/kafka"
	"github.com/sluicehq/sluice/internal/kafkatest"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/sdktest"
)

// eoBroker starts a broker with a 3-partition topic "out".
func eoBroker(t *testing.T) *kafkatest.Broker {
	t.Helper()
	b := kafkatest.StartBroker(t, kafkatest.BrokerConfig{})
	if err := b.CreateTopic(context.Background(), "out", 3, nil); err != nil {
		t.Fatal(err)
	}
	return b
}

// eoSinkFactory returns the factory of a sink "out" writing topic "out".
func eoSinkFactory(t *testing.T, b *kafkatest.Broker, edit func(*kafka.SinkConfig)) sdk.Factory {
	t.Helper()
	cfg := kafka.SinkConfig{Name: "out", Brokers: b.Addrs(), Topic: "out", Inputs: []sdk.Input{{Stream: "s"}},
		FlushTimeout: 10 * time.Second, CommitTimeout: 10 * time.Second}
	if edit != nil {
		edit(&cfg)
	}
	f, err := kafka.NewSink(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// eoStart runs instance 0 of f's sink under exactly-once (see start).
func eoStart(t *testing.T, f sdk.Factory, opts ...sdktest.Option) *sdktest.Harness {
	t.Helper()
	return start(t, f, append([]sdktest.Option{sdktest.WithGuarantee(sdk.ExactlyOnce)}, opts...)...)
}

// writeRecs sends records with values from..to-1.
func writeRecs(t *testing.T, h *sdktest.Harness, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if err := h.Send("s", sdk.Record{Key: []byte("k" + strconv.Itoa(i%7)), Value: []byte(strconv.Itoa(i))}); err != nil {
			t.Fatalf("ProcessRecord %d: %v", i, err)
		}
	}
}

func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func TestExactlyOnceSinkShowsACheckpointsRecordsOnlyAfterCommit(t *testing.T) {
	b := eoBroker(t)
	addrs := b.Addrs()
	h := eoStart(t, eoSinkFactory(t, b, nil))
	committed := startTail(t, addrs, "out", kgo.ReadCommitted())

	writeRecs(t, h, 0, 100)
	must(t, "Checkpoint(1)", h.Checkpoint(1))
	if keys := stateKeys(h, "kafka/txn/"); len(keys) != 1 || keys[0] != "kafka/txn/sluice.out.0.0" {
		t.Fatalf("state lists transactions %v, want the one of sluice.out.0.0", keys)
	}
	// Pre-committed: in the log (flushed) but not visible.
	ends, stable0 := offsets(t, addrs, "out", false), offsets(t, addrs, "out", true)
	total := int64(0)
	for p, e := range ends {
		total += e
		if stable0[p] != 0 {
			t.Fatalf("partition %d: last stable offset %d before Commit, want 0", p, stable0[p])
		}
	}
	if total != 100 {
		t.Fatalf("%d records in the log after PreCommit, want the 100 flushed", total)
	}

	// Records after the barrier go to the next transaction.
	uncommitted := startTail(t, addrs, "out", kgo.ReadUncommitted())
	writeRecs(t, h, 100, 150)
	must(t, "Complete(1)", h.Complete(1))
	sluicetest.WaitEvery(t, 20*time.Second, 20*time.Millisecond, "checkpoint 1's 100 records read committed", func() bool {
		return len(committed.values()) >= 100
	})
	if keys := stateKeys(h, "kafka/txn/"); len(keys) != 0 {
		t.Fatalf("state still lists %v after Commit", keys)
	}
	// Once checkpoint 2's records are in the log, a read_committed
	// consumer still sees only checkpoint 1's: every partition's last
	// stable offset stops at checkpoint 2's open transaction.
	sluicetest.WaitEvery(t, 20*time.Second, 20*time.Millisecond, "checkpoint 2's records in the log", func() bool {
		return len(uncommitted.values()) >= 150
	})
	stable := offsets(t, addrs, "out", true)
	uncommitted.mu.Lock()
	for _, r := range uncommitted.recs {
		if v, _ := strconv.Atoi(string(r.Value)); v >= 100 && r.Offset < stable[r.Partition] {
			t.Errorf("record %d (partition %d offset %d) is below the last stable offset %d before its Commit", v, r.Partition, r.Offset, stable[r.Partition])
		}
	}
	uncommitted.mu.Unlock()
	exactlyOnce(t, committed.values(), 0, 100)

	must(t, "Checkpoint(2)", h.Checkpoint(2))
	must(t, "Complete(2)", h.Complete(2))
	must(t, "Complete(2) again", h.Complete(2))
	exactlyOnce(t, readAll(t, addrs, "out", kgo.ReadCommitted()), 0, 150)
}

func TestExactlyOnceSinkAfterACrashCommitsTheRestoredCheckpointOnceAndAbortsTheRest(t *testing.T) {
	b := eoBroker(t)
	addrs := b.Addrs()
	f := eoSinkFactory(t, b, nil)
	h := eoStart(t, f)

	writeRecs(t, h, 0, 100)
	must(t, "Checkpoint(1)", h.Checkpoint(1)) // checkpoint 1 completes, but its Commit never arrives
	writeRecs(t, h, 100, 150)
	must(t, "Checkpoint(2)", h.Checkpoint(2)) // checkpoint 2 never completes
	writeRecs(t, h, 150, 180)                 // and these are in the open transaction
	// The node dies: the producers vanish without committing or aborting
	// (they are closed when the test ends, by then fenced). Restored from
	// checkpoint 1: Init, then Commit(1).
	must(t, "restore checkpoint 1", h.Crash(1))
	exactlyOnce(t, readAll(t, addrs, "out", kgo.ReadCommitted()), 0, 100)

	// Restored once more from checkpoint 1 (a crash right after that
	// Commit): committing again answers "already committed".
	must(t, "restore checkpoint 1 again", h.Restore(1))

	// The source replays what followed checkpoint 1.
	writeRecs(t, h, 100, 180)
	must(t, "Checkpoint(3)", h.Checkpoint(3))
	must(t, "Complete(3)", h.Complete(3))
	exactlyOnce(t, readAll(t, addrs, "out", kgo.ReadCommitted()), 0, 180)
}

func TestExactlyOnceSinkCyclesThroughItsPool(t *testing.T) {
	b := eoBroker(t)
	addrs := b.Addrs()
	f := eoSinkFactory(t, b, func(c *kafka.SinkConfig) { c.TransactionPool = 4 })
	var logs sluicetest.Buffer
	h := eoStart(t, f, sdktest.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	// Ten checkpoints, each completing one barrier later: four ids suffice
	// (one written, two pending, one committed awaiting confirmation), and
	// each is used again by the producer that committed it.
	for n := 1; n <= 10; n++ {
		writeRecs(t, h, (n-1)*10, n*10)
		must(t, "Checkpoint", h.Checkpoint(uint64(n)))
		if n > 1 {
			must(t, "Complete", h.Complete(uint64(n-1)))
		}
	}
	must(t, "Complete(10)", h.Complete(10))
	if n := strings.Count(logs.String(), "reusing a transactional id before"); n != 0 {
		t.Fatalf("%d ids reused before their commit was confirmed, want none with 4 ids", n)
	}
	exactlyOnce(t, readAll(t, addrs, "out", kgo.ReadCommitted()), 0, 100)
	// A crash now restores checkpoint 10, whose state lists 9 and 10 as
	// pending: both are committed already (Commit(10) after the restore).
	must(t, "restore checkpoint 10", h.Crash(10))
	writeRecs(t, h, 100, 110)
	must(t, "Checkpoint(11)", h.Checkpoint(11))
	must(t, "Complete(11)", h.Complete(11))
	exactlyOnce(t, readAll(t, addrs, "out", kgo.ReadCommitted()), 0, 110)
}

func TestExactlyOnceSinkPoolExhaustion(t *testing.T) {
	b := eoBroker(t)
	addrs := b.Addrs()
	f := eoSinkFactory(t, b, func(c *kafka.SinkConfig) { c.TransactionPool = 2 })
	h := eoStart(t, f)

	writeRecs(t, h, 0, 10)
	must(t, "Checkpoint(1)", h.Checkpoint(1))
	writeRecs(t, h, 10, 20)
	must(t, "Checkpoint(2)", h.Checkpoint(2))
	// Both ids hold a transaction waiting for its checkpoint: the next
	// record is refused, transiently, until a Commit frees one (the
	// instance restarts, as in the runtime, and the record is tried
	// again).
	err := h.Send("s", sdk.Record{Value: []byte("20")})
	if !errors.Is(err, sdk.ErrTransient) || !errors.Is(err, kafka.ErrPoolExhausted) {
		t.Fatalf("ProcessRecord with the pool exhausted: got %v, want an error wrapping sdk.ErrTransient and ErrPoolExhausted", err)
	}
	if !strings.Contains(err.Error(), "[1 2]") {
		t.Fatalf("error %q does not name the checkpoints waited for", err)
	}
	if got := readAll(t, addrs, "out", kgo.ReadUncommitted()); len(got) != 20 {
		t.Fatalf("%d records written, want 20: the refused record must not be written", len(got))
	}
	must(t, "Complete(1)", h.Complete(1))
	writeRecs(t, h, 20, 30) // on the id just committed, with a fresh producer
	must(t, "Checkpoint(3)", h.Checkpoint(3))
	must(t, "Complete(3)", h.Complete(3))
	exactlyOnce(t, readAll(t, addrs, "out", kgo.ReadCommitted()), 0, 30)

	t.Run("restore after an early reuse", func(t *testing.T) {
		// Checkpoint 2's state lists the id reused for checkpoint 3 as
		// pending for checkpoint 1: its EndTxn now meets a newer epoch and
		// is logged as lost (the documented false alarm of an early
		// reuse). The Commit succeeds and forgets the entry — an error
		// would make the runtime keep it, to fail at every restore and
		// hold its pool slot for ever — and nothing is written twice.
		must(t, "restore checkpoint 2", h.Crash(2)) // Init, Commit(2)
		if keys := stateKeys(h, "kafka/txn/"); len(keys) != 0 {
			t.Fatalf("state still lists %v after the loss was logged", keys)
		}
		exactlyOnce(t, readAll(t, addrs, "out", kgo.ReadCommitted()), 0, 30)
	})
}

func TestExactlyOnceSinkAdoptsPendingTransactionsWhenRescaled(t *testing.T) {
	b := eoBroker(t)
	addrs := b.Addrs()
	// Two instances, one key group each.
	f := eoSinkFactory(t, b, func(c *kafka.SinkConfig) { c.Parallelism, c.KeyGroups = 2, 2 })
	h0, h1 := eoStart(t, f), eoStart(t, f, sdktest.WithInstance(1))
	writeRecs(t, h0, 0, 50)
	writeRecs(t, h1, 50, 100)
	must(t, "Checkpoint(1) of instance 0", h0.Checkpoint(1))
	must(t, "Checkpoint(1) of instance 1", h1.Checkpoint(1))
	s0, _ := h0.Snapshot(1)
	s1, _ := h1.Snapshot(1)
	writeRecs(t, h1, 100, 120) // after the barrier: must be aborted

	// Restored with one instance owning both key groups: Init, Commit(1).
	one := eoStart(t, f, sdktest.WithParallelism(1), sdktest.WithSnapshot(s0, s1))
	exactlyOnce(t, readAll(t, addrs, "out", kgo.ReadCommitted()), 0, 100)
	// Instance 1's entry is in key group 1's state, which the instance
	// cannot change: a tombstone in its own group says it is done.
	if got := stateKeys(one, "kafka/txndone/"); len(got) != 1 || got[0] != "kafka/txndone/sluice.out.1.0" {
		t.Fatalf("tombstones %v, want the one of sluice.out.1.0", got)
	}

	// A later restore of that state does not commit it again.
	writeRecs(t, one, 100, 120)
	must(t, "Checkpoint(2)", one.Checkpoint(2))
	must(t, "Complete(2)", one.Complete(2))
	must(t, "restore checkpoint 2", one.Restore(2)) // Close, Init, Commit(2)
	exactlyOnce(t, readAll(t, addrs, "out", kgo.ReadCommitted()), 0, 120)
}

func TestExactlyOnceSinkLogsATimedOutTransactionAsLost(t *testing.T) {
	b := eoBroker(t)
	addrs := b.Addrs()
	f := eoSinkFactory(t, b, func(c *kafka.SinkConfig) { c.TransactionTimeout = time.Second })
	h := eoStart(t, f)
	writeRecs(t, h, 0, 10)
	must(t, "Checkpoint(1)", h.Checkpoint(1))
	// The brokers abort the transaction once it is older than its
	// timeout: the last stable offsets then reach the end.
	ends := offsets(t, addrs, "out", false)
	sluicetest.WaitEvery(t, 20*time.Second, 50*time.Millisecond, "the brokers to abort the timed-out transaction", func() bool {
		stable := offsets(t, addrs, "out", true)
		for p, e := range ends {
			if stable[p] < e {
				return false
			}
		}
		return true
	})
	// The loss is logged at ERROR; the Commit succeeds and forgets the
	// entry (kept, it would fail every later Commit and restore).
	must(t, "Commit of a timed-out transaction", h.Complete(1))
	if keys := stateKeys(h, "kafka/txn/"); len(keys) != 0 {
		t.Fatalf("state still lists %v after the loss was logged", keys)
	}
	must(t, "Commit(1) again", h.Complete(1))
	if got := readAll(t, addrs, "out", kgo.ReadCommitted()); len(got) != 0 {
		t.Fatalf("read committed %v from an aborted transaction", got)
	}
}

func TestExactlyOnceSinkInitReportsTheBrokersDownAsTransient(t *testing.T) {
	b := eoBroker(t)
	f := eoSinkFactory(t, b, func(c *kafka.SinkConfig) { c.CommitTimeout = 300 * time.Millisecond })
	b.Stop()
	_, err := sdktest.New(f) // exactly-once; a failed Init is closed
	if !errors.Is(err, sdk.ErrTransient) {
		t.Fatalf("Init with the brokers down: got %v, want an error wrapping sdk.ErrTransient", err)
	}
	if strings.Contains(err.Error(), "close after the failed init") {
		t.Fatalf("Close after a failed Init: %v", err)
	}
}

func TestExactlyOnceSinkInitRefusesATimeoutAboveTheBrokersMaximum(t *testing.T) {
	b := kafkatest.StartBroker(t, kafkatest.BrokerConfig{Options: []kfake.Opt{kfake.BrokerConfigs(map[string]string{"transaction.max.timeout.ms": "60000"})}})
	f := eoSinkFactory(t, b, func(c *kafka.SinkConfig) { c.TransactionTimeout = 2 * time.Minute })
	_, err := sdktest.New(f) // exactly-once; a failed Init is closed
	if err == nil || errors.Is(err, sdk.ErrTransient) || !strings.Contains(err.Error(), "TransactionTimeout") || !strings.Contains(err.Error(), "transaction.max.timeout.ms") {
		t.Fatalf("Init with a timeout above the brokers' maximum: got %v, want a permanent error naming both settings", err)
	}
	if strings.Contains(err.Error(), "close after the failed init") {
		t.Fatalf("Close after a failed Init: %v", err)
	}
}

func TestSinkTransactionConfigErrorsNameTheField(t *testing.T) {
	ok := kafka.SinkConfig{Name: "out", Brokers: []string{"127.0.0.1:9092"}, Topic: "t", Inputs: []sdk.Input{{Stream: "s"}}}
	for _, tc := range []struct {
		name   string
		change func(*kafka.SinkConfig)
		field  string
	}{
		{"valid", func(*kafka.SinkConfig) {}, ""},
		{"explicit", func(c *kafka.SinkConfig) {
			c.TransactionalIDPrefix, c.TransactionPool, c.TransactionTimeout = "prod.counts", 4, 5*time.Minute
		}, ""},
		{"pool of one", func(c *kafka.SinkConfig) { c.TransactionPool = 1 }, "TransactionPool"},
		{"negative pool", func(c *kafka.SinkConfig) { c.TransactionPool = -3 }, "TransactionPool"},
		{"huge pool", func(c *kafka.SinkConfig) { c.TransactionPool = 5000 }, "TransactionPool"},
		{"short timeout", func(c *kafka.SinkConfig) { c.TransactionTimeout = 10 * time.Millisecond }, "TransactionTimeout"},
		{"long timeout", func(c *kafka.SinkConfig) { c.TransactionTimeout = 2 * time.Hour }, "TransactionTimeout"},
		{"prefix with a space", func(c *kafka.SinkConfig) { c.TransactionalIDPrefix = "a b" }, "TransactionalIDPrefix"},
		{"negative commit timeout", func(c *kafka.SinkConfig) { c.CommitTimeout = -time.Second }, "CommitTimeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.change(&c)
			err := c.Validate()
			var ce *kafka.ConfigError
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("got %v, want no error", err)
			case tc.field != "" && (!errors.As(err, &ce) || ce.Field != tc.field):
				t.Fatalf("got %v, want an error on field %s", err, tc.field)
			}
		})
	}
}
