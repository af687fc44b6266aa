package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/connectors/kafka"
	"github.com/sluicehq/sluice/internal/kafkatest"
	"github.com/sluicehq/sluice/sdk"
)

// write is a state write as the runtime hands it to a state log: the key
// is opaque to the log (here it names its key group to check the restore).
func write(group int, key, value string) sdk.KV {
	kv := sdk.KV{KeyGroup: group, Key: []byte(fmt.Sprintf("g%d/%s", group, key))}
	if value != "" {
		kv.Value = []byte(value)
	}
	return kv
}

func TestStateLogRestoresTheLastWriteOfEachKey(t *testing.T) {
	b := kafkatest.StartBroker(t, kafkatest.BrokerConfig{})
	ctx := context.Background()
	sl, err := kafka.NewStateLog(kafka.StateLogConfig{Brokers: b.Addrs(), Prefix: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	defer sl.Close()

	const groups = 8
	if err := sl.Restore(ctx, "count", groups, 0, groups, func(sdk.KV) error {
		t.Fatal("restored something from a changelog never written")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for round := range 3 {
		var kvs []sdk.KV
		for g := range groups {
			kvs = append(kvs, write(g, "k", fmt.Sprintf("g%d-r%d", g, round)), write(g, "gone", "x"))
			if round == 2 {
				kvs = append(kvs, write(g, "gone", ""))
			}
		}
		if err := sl.Append(ctx, "count", groups, kvs); err != nil {
			t.Fatal(err)
		}
	}
	// Restore groups [2, 5) as the runtime does: the last write wins.
	latest := map[string][]byte{}
	groupOf := map[string]int{}
	if err := sl.Restore(ctx, "count", groups, 2, 5, func(kv sdk.KV) error {
		if g := kv.KeyGroup; g < 2 || g >= 5 || !strings.HasPrefix(string(kv.Key), fmt.Sprintf("g%d/", g)) {
			t.Fatalf("restored %q as a write of key group %d", kv.Key, g)
		}
		latest[string(kv.Key)] = kv.Value
		groupOf[string(kv.Key)] = kv.KeyGroup
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	live := 0
	for k, v := range latest {
		g := groupOf[k]
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
	err = sl.Append(ctx, "count", 16, []sdk.KV{write(0, "k", "v")})
	if !errors.Is(err, kafka.ErrPartitions) {
		t.Fatalf("append with 16 key groups to an 8-partition changelog: %v, want ErrPartitions", err)
	}
	// A fresh StateLog (another node) checks the broker's topic.
	sl2, err := kafka.NewStateLog(kafka.StateLogConfig{Brokers: b.Addrs(), Prefix: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	defer sl2.Close()
	err = sl2.Append(ctx, "count", 16, []sdk.KV{write(0, "k", "v")})
	if !errors.Is(err, kafka.ErrPartitions) {
		t.Fatalf("append with 16 key groups to an 8-partition changelog: %v, want ErrPartitions", err)
	}
}
