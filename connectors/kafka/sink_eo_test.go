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

// initSink makes an instance of f and Inits it with c; it is closed when
// the test ends (after the test's own cleanups).
func initSink(t *testing.T, f sdk.Factory, c *callCtx) *kafka.Sink {
	t.Helper()
	s := f().(*kafka.Sink)
	if err := s.Init(c); err != nil {
		t.Fatalf("Init: %v", err)
	}
	t.Cleanup(func() { _ = s.Close(c) })
	return s
}

// writeRecs processes records with values from..to-1.
func writeRecs(t *testing.T, s *kafka.Sink, c *callCtx, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if err := s.ProcessRecord(c, sdk.Record{Key: []byte("k" + strconv.Itoa(i%7)), Value: []byte(strconv.Itoa(i))}); err != nil {
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

func eoCtx() *callCtx { return newGuaranteeCtx("out", 0, 1, sdk.ExactlyOnce, nil) }

func TestExactlyOnceSinkShowsACheckpointsRecordsOnlyAfterCommit(t *testing.T) {
	b := eoBroker(t)
	addrs := b.Addrs()
	c := eoCtx()
	s := initSink(t, eoSinkFactory(t, b, nil), c)
	committed := startTail(t, addrs, "out", kgo.ReadCommitted())

	writeRecs(t, s, c, 0, 100)
	must(t, "PreCommit(1)", s.PreCommit(c, 1))
	if keys := c.state.keys("kafka/txn/"); len(keys) != 1 || keys[0] != "kafka/txn/sluice.out.0.0" {
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
	writeRecs(t, s, c, 100, 150)
	must(t, "Commit(1)", s.Commit(c, 1))
	sluicetest.WaitEvery(t, 20*time.Second, 20*time.Millisecond, "checkpoint 1's 100 records read committed", func() bool {
		return len(committed.values()) >= 100
	})
	if keys := c.state.keys("kafka/txn/"); len(keys) != 0 {
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

	must(t, "PreCommit(2)", s.PreCommit(c, 2))
	must(t, "Commit(2)", s.Commit(c, 2))
	must(t, "Commit(2) again", s.Commit(c, 2))
	exactlyOnce(t, readAll(t, addrs, "out", kgo.ReadCommitted()), 0, 150)
}

func TestExactlyOnceSinkAfterACrashCommitsTheRestoredCheckpointOnceAndAbortsTheRest(t *testing.T) {
	b := eoBroker(t)
	addrs := b.Addrs()
	f := eoSinkFactory(t, b, nil)
	c := eoCtx()
	crashed := initSink(t, f, c)

	writeRecs(t, crashed, c, 0, 100)
	must(t, "PreCommit(1)", crashed.PreCommit(c, 1))
	checkpoint1 := c.state.snapshot() // checkpoint 1 completes, but its Commit never arrives
	writeRecs(t, crashed, c, 100, 150)
	must(t, "PreCommit(2)", crashed.PreCommit(c, 2)) // checkpoint 2 never completes
	writeRecs(t, crashed, c, 150, 180)               // and these are in the open transaction
	// The node dies: the producers vanish without committing or aborting
	// (they are closed when the test ends, by then fenced).

	c1 := c.restored(checkpoint1)
	restored := initSink(t, f, c1)
	must(t, "Commit(1) after the restore", restored.Commit(c1, 1))
	exactlyOnce(t, readAll(t, addrs, "out", kgo.ReadCommitted()), 0, 100)

	// Restored once more from checkpoint 1 (a crash right after that
	// Commit): committing again answers "already committed".
	must(t, "Close", restored.Close(c1))
	c2 := c.restored(checkpoint1)
	again := initSink(t, f, c2)
	must(t, "Commit(1) after a second restore", again.Commit(c2, 1))

	// The source replays what followed checkpoint 1.
	writeRecs(t, again, c2, 100, 180)
	must(t, "PreCommit(2)", again.PreCommit(c2, 2))
	must(t, "Commit(2)", again.Commit(c2, 2))
	exactlyOnce(t, readAll(t, addrs, "out", kgo.ReadCommitted()), 0, 180)
}

func TestExactlyOnceSinkCyclesThroughItsPool(t *testing.T) {
	b := eoBroker(t)
	addrs := b.Addrs()
	f := eoSinkFactory(t, b, func(c *kafka.SinkConfig) { c.TransactionPool = 4 })
	c := eoCtx()
	var logs sluicetest.Buffer
	c.log = slog.New(slog.NewTextHandler(&logs, nil))
	s := initSink(t, f, c)
	// Ten checkpoints, each completing one barrier later: four ids suffice
	// (one written, two pending, one committed awaiting confirmation), and
	// each is used again by the producer that committed it.
	var last stateSnap
	for n := 1; n <= 10; n++ {
		writeRecs(t, s, c, (n-1)*10, n*10)
		must(t, "PreCommit", s.PreCommit(c, uint64(n)))
		last = c.state.snapshot()
		if n > 1 {
			must(t, "Commit", s.Commit(c, uint64(n-1)))
		}
	}
	must(t, "Commit(10)", s.Commit(c, 10))
	if n := strings.Count(logs.String(), "reusing a transactional id before"); n != 0 {
		t.Fatalf("%d ids reused before their commit was confirmed, want none with 4 ids", n)
	}
	exactlyOnce(t, readAll(t, addrs, "out", kgo.ReadCommitted()), 0, 100)
	// A crash now restores checkpoint 10, whose state lists 9 and 10 as
	// pending: both are committed already.
	c10 := c.restored(last)
	r := initSink(t, f, c10)
	must(t, "Commit(10) after the restore", r.Commit(c10, 10))
	writeRecs(t, r, c10, 100, 110)
	must(t, "PreCommit(11)", r.PreCommit(c10, 11))
	must(t, "Commit(11)", r.Commit(c10, 11))
	exactlyOnce(t, readAll(t, addrs, "out", kgo.ReadCommitted()), 0, 110)
}

func TestExactlyOnceSinkPoolExhaustion(t *testing.T) {
	b := eoBroker(t)
	addrs := b.Addrs()
	f := eoSinkFactory(t, b, func(c *kafka.SinkConfig) { c.TransactionPool = 2 })
	c := eoCtx()
	s := initSink(t, f, c)

	writeRecs(t, s, c, 0, 10)
	must(t, "PreCommit(1)", s.PreCommit(c, 1))
	writeRecs(t, s, c, 10, 20)
	must(t, "PreCommit(2)", s.PreCommit(c, 2))
	checkpoint2 := c.state.snapshot()
	// Both ids hold a transaction waiting for its checkpoint: the next
	// record is refused, transiently, until a Commit frees one.
	err := s.ProcessRecord(c, sdk.Record{Value: []byte("20")})
	if !errors.Is(err, sdk.ErrTransient) || !errors.Is(err, kafka.ErrPoolExhausted) {
		t.Fatalf("ProcessRecord with the pool exhausted: got %v, want an error wrapping sdk.ErrTransient and ErrPoolExhausted", err)
	}
	if !strings.Contains(err.Error(), "[1 2]") {
		t.Fatalf("error %q does not name the checkpoints waited for", err)
	}
	if got := readAll(t, addrs, "out", kgo.ReadUncommitted()); len(got) != 20 {
		t.Fatalf("%d records written, want 20: the refused record must not be written", len(got))
	}
	must(t, "Commit(1)", s.Commit(c, 1))
	writeRecs(t, s, c, 20, 30) // on the id just committed, with a fresh producer
	must(t, "PreCommit(3)", s.PreCommit(c, 3))
	must(t, "Commit(3)", s.Commit(c, 3))
	exactlyOnce(t, readAll(t, addrs, "out", kgo.ReadCommitted()), 0, 30)

	t.Run("restore after an early reuse", func(t *testing.T) {
		// Checkpoint 2's state lists the id reused for checkpoint 3 as
		// pending for checkpoint 1: its EndTxn now meets a newer epoch and
		// is logged as lost (the documented false alarm of an early
		// reuse). The Commit succeeds and forgets the entry — an error
		// would make the runtime keep it, to fail at every restore and
		// hold its pool slot for ever — and nothing is written twice.
		c2 := c.restored(checkpoint2)
		r := initSink(t, f, c2)
		must(t, "Commit(2)", r.Commit(c2, 2))
		if keys := c2.state.keys("kafka/txn/"); len(keys) != 0 {
			t.Fatalf("state still lists %v after the loss was logged", keys)
		}
		exactlyOnce(t, readAll(t, addrs, "out", kgo.ReadCommitted()), 0, 30)
	})
}

func TestExactlyOnceSinkAdoptsPendingTransactionsWhenRescaled(t *testing.T) {
	b := eoBroker(t)
	addrs := b.Addrs()
	f := eoSinkFactory(t, b, nil)
	// Two instances, one key group each.
	c0 := newGuaranteeCtx("out", 0, 2, sdk.ExactlyOnce, nil)
	c1 := newGuaranteeCtx("out", 1, 2, sdk.ExactlyOnce, nil)
	s0, s1 := initSink(t, f, c0), initSink(t, f, c1)
	writeRecs(t, s0, c0, 0, 50)
	writeRecs(t, s1, c1, 50, 100)
	must(t, "PreCommit(1) of instance 0", s0.PreCommit(c0, 1))
	must(t, "PreCommit(1) of instance 1", s1.PreCommit(c1, 1))
	checkpoint1 := merge(c0.state.snapshot(), c1.state.snapshot())
	writeRecs(t, s1, c1, 100, 120) // after the barrier: must be aborted

	// Restored with one instance owning both key groups.
	r := c0.withGroups(0, 1, 2, 0, 2, checkpoint1)
	one := initSink(t, f, r)
	must(t, "Commit(1)", one.Commit(r, 1))
	exactlyOnce(t, readAll(t, addrs, "out", kgo.ReadCommitted()), 0, 100)
	// Instance 1's entry is in key group 1's state, which the instance
	// cannot change: a tombstone in its own group says it is done.
	if got := r.state.keys("kafka/txndone/"); len(got) != 1 || got[0] != "kafka/txndone/sluice.out.1.0" {
		t.Fatalf("tombstones %v, want the one of sluice.out.1.0", got)
	}

	// A later restore of that state does not commit it again.
	writeRecs(t, one, r, 100, 120)
	must(t, "PreCommit(2)", one.PreCommit(r, 2))
	checkpoint2 := r.state.snapshot()
	must(t, "Commit(2)", one.Commit(r, 2))
	must(t, "Close", one.Close(r))
	r2 := r.restored(checkpoint2)
	again := initSink(t, f, r2)
	must(t, "Commit(2) after a restore", again.Commit(r2, 2))
	exactlyOnce(t, readAll(t, addrs, "out", kgo.ReadCommitted()), 0, 120)
}

func TestExactlyOnceSinkLogsATimedOutTransactionAsLost(t *testing.T) {
	b := eoBroker(t)
	addrs := b.Addrs()
	f := eoSinkFactory(t, b, func(c *kafka.SinkConfig) { c.TransactionTimeout = time.Second })
	c := eoCtx()
	s := initSink(t, f, c)
	writeRecs(t, s, c, 0, 10)
	must(t, "PreCommit(1)", s.PreCommit(c, 1))
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
	must(t, "Commit of a timed-out transaction", s.Commit(c, 1))
	if keys := c.state.keys("kafka/txn/"); len(keys) != 0 {
		t.Fatalf("state still lists %v after the loss was logged", keys)
	}
	must(t, "Commit(1) again", s.Commit(c, 1))
	if got := readAll(t, addrs, "out", kgo.ReadCommitted()); len(got) != 0 {
		t.Fatalf("read committed %v from an aborted transaction", got)
	}
}

func TestExactlyOnceSinkInitReportsTheBrokersDownAsTransient(t *testing.T) {
	b := eoBroker(t)
	f := eoSinkFactory(t, b, func(c *kafka.SinkConfig) { c.CommitTimeout = 300 * time.Millisecond })
	b.Stop()
	s := f().(*kafka.Sink)
	c := eoCtx()
	err := s.Init(c)
	if !errors.Is(err, sdk.ErrTransient) {
		t.Fatalf("Init with the brokers down: got %v, want an error wrapping sdk.ErrTransient", err)
	}
	must(t, "Close after a failed Init", s.Close(c))
}

func TestExactlyOnceSinkInitRefusesATimeoutAboveTheBrokersMaximum(t *testing.T) {
	b := kafkatest.StartBroker(t, kafkatest.BrokerConfig{Options: []kfake.Opt{kfake.BrokerConfigs(map[string]string{"transaction.max.timeout.ms": "60000"})}})
	f := eoSinkFactory(t, b, func(c *kafka.SinkConfig) { c.TransactionTimeout = 2 * time.Minute })
	s := f().(*kafka.Sink)
	c := eoCtx()
	err := s.Init(c)
	if err == nil || errors.Is(err, sdk.ErrTransient) || !strings.Contains(err.Error(), "TransactionTimeout") || !strings.Contains(err.Error(), "transaction.max.timeout.ms") {
		t.Fatalf("Init with a timeout above the brokers' maximum: got %v, want a permanent error naming both settings", err)
	}
	must(t, "Close after a failed Init", s.Close(c))
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
