package kafkawordcount

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Load describes a deterministic input: record i (0 ≤ i < Records) is the
// word Word(i, Vocabulary), or, when PoisonEvery > 0 and i mod PoisonEvery
// = PoisonEvery-1, a value that is not a word.
type Load struct {
	Records     int64
	Vocabulary  int
	PoisonEvery int64
}

// Poison reports whether record i is not a word.
func (l Load) Poison(i int64) bool { return l.PoisonEvery > 0 && i%l.PoisonEvery == l.PoisonEvery-1 }

// Value returns the value of record i.
func (l Load) Value(i int64) []byte {
	if l.Poison(i) {
		return []byte("not a word \xff " + strconv.FormatInt(i, 10))
	}
	return []byte(Word(i, l.Vocabulary))
}

// Counts returns how many times each word occurs in the load, and the
// number of poison records.
func (l Load) Counts() (counts map[string]int64, poison int64) {
	counts = make(map[string]int64, l.Vocabulary)
	for i := range l.Records {
		if l.Poison(i) {
			poison++
			continue
		}
		counts[Word(i, l.Vocabulary)]++
	}
	return counts, poison
}

// Word returns the word of record i: one of vocabulary words "w0", "w1", …,
// picked by a hash of i so that consecutive records differ.
func Word(i int64, vocabulary int) string {
	x := uint64(i) + 0x9e3779b97f4a7c15 // splitmix64
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	x ^= x >> 31
	return "w" + strconv.FormatUint(x%uint64(vocabulary), 10)
}

// Produce writes the load's records [from, to) to topic with cl, at most
// rate records per second (0: as fast as the brokers take them), and waits
// until the brokers have acknowledged them all. Each record's timestamp is
// the time it was produced.
func (l Load) Produce(ctx context.Context, cl *kgo.Client, topic string, from, to int64, rate float64) error {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			mu.Lock()
			if firstErr == nil {
				firstErr = err
			}
			mu.Unlock()
		}
		wg.Done()
	}
	start := time.Now()
	for i := from; i < to; i++ {
		if rate > 0 && i%256 == 0 {
			if due := start.Add(time.Duration(float64(i-from) / rate * float64(time.Second))); time.Until(due) > 0 {
				select {
				case <-time.After(time.Until(due)): // pacing
				case <-ctx.Done():
					return ctx.Err()
				}
			}
		}
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: l.Value(i)}, promise)
	}
	wg.Wait()
	if firstErr != nil {
		return fmt.Errorf("kafkawordcount: produce: %w", firstErr)
	}
	return nil
}
