// Package testkinds holds deterministic operators for Sluice's multi-process
// tests and benchmarks: a generator of numbered records over a fixed key
// set and a group-by counter whose state can be checked exactly.
package testkinds

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/connectors/generate"
	"github.com/sluicehq/sluice/sdk"
)

// Stream names.
const (
	Words  = "words"
	Counts = "counts"
)

// Key returns the key of record i among keys keys: "k<i mod keys>".
func Key(i int64, keys int) string { return "k" + strconv.FormatInt(i%int64(keys), 10) }

// Gen returns a generator of records 0..count-1 with keys Key(i, keys) and
// values i (decimal), at most rate records/s per instance (0: unlimited).
func Gen(count int64, keys int, rate float64, parallelism int) sdk.Factory {
	return func() sdk.Operator {
		return &generate.Source{Name: "gen", Stream: Words, Count: count, Rate: rate, Parallelism: parallelism, Batch: 256,
			Make: func(i int64, _ *rand.Rand) sdk.Record {
				// EventTime stays zero: the runtime stamps the Poll's start.
				return sdk.Record{Key: []byte(Key(i, keys)), Value: strconv.AppendInt(nil, i, 10)}
			}}
	}
}

// Counter counts records per key (group-by). Its state value for a key is
// the count as 8 big-endian bytes. With emit set it also produces every
// new count to the "counts" stream: as 8 big-endian bytes, or as decimal
// text with Decimal set.
type Counter struct {
	Parallelism int
	Emit        bool
	Decimal     bool
	// Pad, when positive, appends that many pseudo-random (incompressible)
	// bytes to every state value after the count, so that a benchmark can
	// build a large state with few keys. DecodeCount does not read such
	// values; PaddedCount does.
	Pad int
	// Cost is waited on each record (as Worker's), and Autoscale, when
	// set, has the autoscaler size the counter.
	Cost      time.Duration
	Autoscale *sdk.AutoscaleSpec
}

// CounterFactory returns a factory of Counter.
func CounterFactory(parallelism int, emit bool) sdk.Factory {
	return func() sdk.Operator { return Counter{Parallelism: parallelism, Emit: emit} }
}

// Metadata implements sdk.Operator.
func (c Counter) Metadata() sdk.Metadata {
	m := sdk.Metadata{Name: "count", Inputs: []sdk.Input{{Stream: Words, Routing: sdk.GroupBy}}, Parallelism: c.Parallelism, Autoscale: c.Autoscale}
	if c.Emit {
		m.Outputs = []string{Counts}
	}
	return m
}

// Init implements sdk.Operator.
func (Counter) Init(sdk.Context) error { return nil }

// ProcessRecord adds one to the key's count.
func (c Counter) ProcessRecord(ctx sdk.Context, rec sdk.Record) error {
	if c.Cost > 0 {
		time.Sleep(c.Cost) // the record's cost (see Worker), not a synchronisation
	}
	var n int64
	var err error
	if c.Pad > 0 {
		n, err = c.addPadded(ctx.State(), rec.Key)
	} else {
		n, err = sdk.GetInt64(ctx.State(), rec.Key)
		sdk.PutInt64(ctx.State(), rec.Key, n+1)
	}
	if err != nil {
		return err
	}
	if c.Emit {
		v := sdk.Int64Bytes(n + 1)
		if c.Decimal {
			v = strconv.AppendInt(nil, n+1, 10)
		}
		return ctx.Produce(Counts, sdk.Record{Key: rec.Key, Value: v})
	}
	return nil
}

// ProcessTimer implements sdk.Operator.
func (Counter) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

// addPadded adds one to key's padded count and returns the count before.
func (c Counter) addPadded(st sdk.State, key []byte) (int64, error) {
	var n int64
	v, err := st.Get(key)
	switch {
	case err == nil:
		if n, err = PaddedCount(v); err != nil {
			return 0, err
		}
	case !errors.Is(err, sdk.ErrNotFound):
		return 0, err
	}
	out := make([]byte, 8+c.Pad)
	binary.BigEndian.PutUint64(out, uint64(n+1))
	// Seeded by the key and the count: no two values share their padding,
	// so that Pebble's block compression finds nothing to compress.
	h := fnv.New64a()
	h.Write(key)
	fill := rand.New(rand.NewPCG(h.Sum64(), uint64(n)))
	for i := 8; i < len(out); i += 8 {
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], fill.Uint64())
		copy(out[i:], w[:])
	}
	st.Set(key, out)
	return n, nil
}

// PaddedCount decodes a state value of a Counter with Pad.
func PaddedCount(v []byte) (int64, error) {
	if len(v) < 8 {
		return 0, errors.New("testkinds: padded count value is shorter than 8 bytes")
	}
	return int64(binary.BigEndian.Uint64(v)), nil
}

// DecodeCount decodes a counter state value.
func DecodeCount(v []byte) (int64, error) {
	if len(v) != 8 {
		return 0, errors.New("testkinds: count value is not 8 bytes")
	}
	return int64(binary.BigEndian.Uint64(v)), nil
}

// CountLines reads the "key\tcount" lines a file sink writes of a
// Counter's decimal counts (Emit, Decimal): how many times each count of
// each key is there. Exactly-once means each of 1 … n once for a key seen
// n times.
func CountLines(lines []string) (map[string]map[int]int, error) {
	seen := map[string]map[int]int{}
	for _, l := range lines {
		k, v, ok := strings.Cut(l, "\t")
		n, err := strconv.Atoi(v)
		if !ok || err != nil {
			return nil, fmt.Errorf("testkinds: bad count line %q", l)
		}
		if seen[k] == nil {
			seen[k] = map[int]int{}
		}
		seen[k][n]++
	}
	return seen, nil
}

// SinkParts returns the lines of the committed parts ("<path>.part-*")
// of a file sink writing path, in name order.
func SinkParts(path string) ([]string, error) {
	parts, err := filepath.Glob(path + ".part-*")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range parts {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		if len(b) > 0 {
			out = append(out, strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")...)
		}
	}
	return out, nil
}
