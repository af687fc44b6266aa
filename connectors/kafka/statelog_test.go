package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/sluicehq/sluice/connectors/kafka"
	"github.com/sluicehq/sluice/internal/kafkatest"
	"github.com/sluicehq/sluice/persistence"
)

// committedWrites makes real state writes of op in a Pebble store and
// returns what a commit hands to the state log.
func committedWrites(t *testing.T, db *persistence.DB, op string, apply func(s *persistence.Store)) []persistence.KV {
	t.Helper()
	s := db.NewStore(op)
	apply(s)
	var log []persistence.KV
	if err := s.CommitLogged(false, &log); err != nil {
		t.Fatal(err)
	}
	return log
}

func TestStateLogRestoresTheLastWriteOfEachKey(t *testing.T) {
	b := kafkatest.StartBroker(t, kafkatest.BrokerConfig{})
	ctx := context.Background()
	sl, err := kafka.NewStateLog(kafka.StateLogConfig{Brokers: b.Addrs(), Prefix: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	defer sl.Close()
	db, err := persistence.Open(t.TempDir(), persistence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	const groups = 8
	if err := sl.Restore(ctx, "count", groups, 0, groups, func(persistence.KV) error {
		t.Fatal("restored something from a changelog never written")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for round := range 3 {
		kvs := committedWrites(t, db, "count", func(s *persistence.Store) {
			for g := range groups {
				s.Set(g, []byte("k"), []byte(fmt.Sprintf("g%d-r%d", g, round)))
				s.Set(g, []byte("gone"), []byte("x"))
				if round == 2 {
					s.Delete(g, []byte("gone"))
				}
			}
		})
		if err := sl.Append(ctx, "count", groups, kvs); err != nil {
			t.Fatal(err)
		}
	}
	// Restore groups [2, 5) as the runtime does: the last write wins.
	latest := map[string][]byte{}
	if err := sl.Restore(ctx, "count", groups, 2, 5, func(kv persistence.KV) error {
		if g := persistence.KeyGroupOf("count", kv.Key); g < 2 || g >= 5 {
			t.Fatalf("restored a write of key group %d", g)
		}
		latest[string(kv.Key)] = kv.Value
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	live := 0
	for k, v := range latest {
		g := persistence.KeyGroupOf("count", []byte(k))
		switch string(v) {
		case fmt.Sprintf("g%d-r2", g):
			live++
		case "":
			if v != nil {
				t.Fatalf("deleted key restored as an empty value, want nil")
			}
		default:
			t.Fatalf("key group %d restored %q", g, v)
		}
	}
	if live != 3 || len(latest) != 6 {
		t.Fatalf("restored %d live keys of %d, want 3 of 6", live, len(latest))
	}

	// An operator whose key groups changed cannot use the old changelog.
	err = sl.Append(ctx, "count", 16, committedWrites(t, db, "count", func(s *persistence.Store) { s.Set(0, []byte("k"), []byte("v")) }))
	if !errors.Is(err, kafka.ErrPartitions) {
		t.Fatalf("append with 16 key groups to an 8-partition changelog: %v, want ErrPartitions", err)
	}
	// A fresh StateLog (another node) checks the broker's topic.
	sl2, err := kafka.NewStateLog(kafka.StateLogConfig{Brokers: b.Addrs(), Prefix: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	defer sl2.Close()
	err = sl2.Append(ctx, "count", 16, committedWrites(t, db, "count", func(s *persistence.Store) { s.Set(0, []byte("k"), []byte("v")) }))
	if !errors.Is(err, kafka.ErrPartitions) {
		t.Fatalf("append with 16 key groups to an 8-partition changelog: %v, want ErrPartitions", err)
	}
}
