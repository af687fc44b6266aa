// Package wordcount is the classic word count on Sluice: a generator of
// sentences, a splitter (shuffle), a counter (group-by word, counts in
// state) and a top-words operator that reports the most frequent words.
//
//	sentences ──▶ split ──words──▶ count ──counts──▶ top ──top-words──▶
package wordcount

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/connectors/generate"
	"github.com/sluicehq/sluice/sdk"
)

// Stream names.
const (
	Sentences = "sentences"
	Words     = "words"
	Counts    = "counts"
	TopWords  = "top-words"
)

var corpus = strings.Fields(`the quick brown fox jumps over the lazy dog while the cat
sleeps on a warm mat and the bird sings a song of streams operators and state`)

// SentenceSource generates random sentences from a small corpus, rate per
// second (0: unlimited), stopping after count sentences (0: never).
func SentenceSource(rate float64, count int64) sdk.Factory {
	return func() sdk.Operator {
		return &generate.Source{Name: "sentences", Stream: Sentences, Rate: rate, Count: count,
			Make: func(_ int64, rng *rand.Rand) sdk.Record {
				n := 3 + rng.IntN(8)
				words := make([]string, n)
				for i := range words {
					words[i] = corpus[min(int(rng.ExpFloat64()*8), len(corpus)-1)]
				}
				return sdk.Record{Value: []byte(strings.Join(words, " "))}
			}}
	}
}

// Split emits one record per word, keyed by the word.
type Split struct{}

// Metadata implements sdk.Operator.
func (Split) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: "split", Inputs: []sdk.Input{{Stream: Sentences}}, Outputs: []string{Words}, Parallelism: 2}
}

// Init implements sdk.Operator.
func (Split) Init(sdk.Context) error { return nil }

// ProcessRecord splits the sentence.
func (Split) ProcessRecord(ctx sdk.Context, rec sdk.Record) error {
	for _, w := range bytes.Fields(rec.Value) {
		if err := ctx.Produce(Words, sdk.Record{Key: w}); err != nil {
			return err
		}
	}
	return nil
}

// ProcessTimer implements sdk.Operator.
func (Split) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

// Count keeps a count per word and emits the new count.
type Count struct{}

// Metadata implements sdk.Operator.
func (Count) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: "count", Inputs: []sdk.Input{{Stream: Words, Routing: sdk.GroupBy}}, Outputs: []string{Counts}, Parallelism: 4}
}

// Init implements sdk.Operator.
func (Count) Init(sdk.Context) error { return nil }

// ProcessRecord adds one to the word's count.
func (Count) ProcessRecord(ctx sdk.Context, rec sdk.Record) error {
	n, err := sdk.GetInt64(ctx.State(), rec.Key)
	if err != nil {
		return err
	}
	sdk.PutInt64(ctx.State(), rec.Key, n+1)
	return ctx.Produce(Counts, sdk.Record{Key: rec.Key, Value: sdk.Int64Bytes(n + 1)})
}

// ProcessTimer implements sdk.Operator.
func (Count) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

// Top keeps the latest count of every word and, once a second, emits the
// ten most frequent as "word=count …".
type Top struct{}

// Metadata implements sdk.Operator.
func (Top) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: "top", Inputs: []sdk.Input{{Stream: Counts}}, Outputs: []string{TopWords}}
}

// Init schedules the first report.
func (Top) Init(ctx sdk.Context) error { return ctx.SetTimer("report", time.Now().Add(time.Second)) }

// ProcessRecord stores the word's latest count.
func (Top) ProcessRecord(ctx sdk.Context, rec sdk.Record) error {
	ctx.State().Set(append([]byte("c/"), rec.Key...), rec.Value)
	return nil
}

// ProcessTimer emits the top ten words.
func (Top) ProcessTimer(ctx sdk.Context, _ string, _ time.Time) error {
	type wc struct {
		w string
		n int64
	}
	var all []wc
	err := ctx.State().Scan([]byte("c/"), func(k, v []byte) error {
		n, err := sdk.BytesInt64(v)
		all = append(all, wc{string(k[2:]), n})
		return err
	})
	if err != nil {
		return err
	}
	slices.SortFunc(all, func(a, b wc) int {
		if a.n != b.n {
			return int(b.n - a.n)
		}
		return strings.Compare(a.w, b.w)
	})
	var b strings.Builder
	for i, x := range all[:min(10, len(all))] {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(x.w + "=" + strconv.FormatInt(x.n, 10))
	}
	if err := ctx.Produce(TopWords, sdk.Record{Key: []byte("top"), Value: []byte(b.String())}); err != nil {
		return err
	}
	return ctx.SetTimer("report", time.Now().Add(time.Second))
}
