// Package kafkawordcount is the Kafka word count sample: a topic of words
// in, a running count per word out, at least once across node crashes.
//
//	topic "words" ──kafka-source──▶ words ──count (group-by)──▶ counts ──kafka-sink──▶ topic "word-counts"
//	                     │
//	                     └─▶ kafka-source.deadletter ──kafka-dlq──▶ topic "words.deadletter"
//
// Each input record's value is one word. The counter keeps a count per
// word in its state and emits the new count with every record (key: the
// word, value: the count in decimal), so the largest count seen for a word
// in the output topic is the number of times the word was read. Records
// that are not a single word (empty, not UTF-8, with spaces) go to the
// dead-letter topic with the partition and offset they came from.
//
// Run with node.Config.AtLeastOnce and a kafka.StateLog (cmd/kafka-wordcount
// does), a node crash neither loses a word nor lowers a count: the
// crashed node's counters come back from their changelog, sources replay
// from the last durable offsets, and a replayed word is counted again
// (a duplicate: the largest count then exceeds the true one). A crash
// replays what the sources read since their durable positions: at most
// about kafka.SourceConfig.MaxUndurable (1 s) of reading per source.
package kafkawordcount

import (
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/connectors/kafka"
	"github.com/sluicehq/sluice/sdk"
)

// Operator (and kind) and stream names.
const (
	SourceName         = "kafka-source"
	CountName          = "count"
	SinkName           = "kafka-sink"
	DeadLetterSinkName = "kafka-dlq"

	Words  = "words"
	Counts = "counts"
)

// MaxWordBytes bounds a word; longer values are dead-lettered.
const MaxWordBytes = 64

// Config configures the sample's operators. DefaultConfig has the defaults;
// zero fields are taken from it.
type Config struct {
	// Brokers are the Kafka seed brokers; required.
	Brokers []string
	// Input, Output and DeadLetters are the topics of words, of counts and
	// of records that are not words.
	Input, Output, DeadLetters string
	// Group stores the source's committed offsets.
	Group string
	// Parallelism of the source, the counter and the sink.
	SourceParallelism, CountParallelism, SinkParallelism int
	// Commit is the source's commit policy: kafka.CommitDurable with
	// node.Config.AtLeastOnce (the default), kafka.CommitProduced without.
	Commit kafka.CommitPolicy
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{Input: "words", Output: "word-counts", DeadLetters: "words.deadletter", Group: "kafka-wordcount",
		SourceParallelism: 3, CountParallelism: 6, SinkParallelism: 3}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Input == "" {
		c.Input = d.Input
	}
	if c.Output == "" {
		c.Output = d.Output
	}
	if c.DeadLetters == "" {
		c.DeadLetters = d.DeadLetters
	}
	if c.Group == "" {
		c.Group = d.Group
	}
	if c.SourceParallelism == 0 {
		c.SourceParallelism = d.SourceParallelism
	}
	if c.CountParallelism == 0 {
		c.CountParallelism = d.CountParallelism
	}
	if c.SinkParallelism == 0 {
		c.SinkParallelism = d.SinkParallelism
	}
	return c
}

// Operators returns the sample's operators: kafka-source, count,
// kafka-sink and kafka-dlq. The connectors check their settings here.
func Operators(cfg Config) ([]sdk.Factory, error) {
	cfg = cfg.withDefaults()
	src, err := kafka.NewSource(kafka.SourceConfig{
		Name: SourceName, Brokers: cfg.Brokers, Topics: []string{cfg.Input}, Group: cfg.Group, Stream: Words,
		Parallelism: cfg.SourceParallelism, KeyGroups: 32, Decode: DecodeWord, Commit: cfg.Commit,
	})
	if err != nil {
		return nil, err
	}
	sink, err := kafka.NewSink(kafka.SinkConfig{
		Name: SinkName, Brokers: cfg.Brokers, Topic: cfg.Output, Inputs: []sdk.Input{{Stream: Counts}},
		Parallelism: cfg.SinkParallelism, KeyGroups: 32,
	})
	if err != nil {
		return nil, err
	}
	// Dead letters of every operator of the pipeline end up in one topic,
	// with the headers saying what and where.
	dlq, err := kafka.NewSink(kafka.SinkConfig{
		Name: DeadLetterSinkName, Brokers: cfg.Brokers, Topic: cfg.DeadLetters, KeyGroups: 4,
		Inputs: []sdk.Input{{Stream: sdk.DeadLetterStream(SourceName)}, {Stream: sdk.DeadLetterStream(CountName)}, {Stream: sdk.DeadLetterStream(SinkName)}},
	})
	if err != nil {
		return nil, err
	}
	count := func() sdk.Operator { return Counter{Parallelism: cfg.CountParallelism} }
	return []sdk.Factory{src, count, sink, dlq}, nil
}

// ErrNotAWord is the error of DecodeWord for values that are not one word.
var ErrNotAWord = errors.New("kafkawordcount: not a word")

// DecodeWord is the source's decoder: the record's value must be one word
// (1 to MaxWordBytes bytes of UTF-8 with no space or control character);
// it becomes the key of the record produced.
func DecodeWord(r *kgo.Record) (sdk.Record, error) {
	v := r.Value
	switch {
	case len(v) == 0:
		return sdk.Record{}, fmt.Errorf("%w: empty value", ErrNotAWord)
	case len(v) > MaxWordBytes:
		return sdk.Record{}, fmt.Errorf("%w: %d bytes, more than %d", ErrNotAWord, len(v), MaxWordBytes)
	case !utf8.Valid(v):
		return sdk.Record{}, fmt.Errorf("%w: not UTF-8", ErrNotAWord)
	}
	for _, c := range string(v) {
		if unicode.IsSpace(c) || unicode.IsControl(c) {
			return sdk.Record{}, fmt.Errorf("%w: has %q", ErrNotAWord, c)
		}
	}
	return sdk.Record{Key: v, EventTime: r.Timestamp}, nil
}

// Counter counts records per key (group-by) and emits each new count.
type Counter struct {
	Parallelism int
}

var _ sdk.Operator = Counter{}

// Metadata implements sdk.Operator.
func (c Counter) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: CountName, Inputs: []sdk.Input{{Stream: Words, Routing: sdk.GroupBy}}, Outputs: []string{Counts},
		Parallelism: c.Parallelism, KeyGroups: 64}
}

// Init implements sdk.Operator.
func (Counter) Init(sdk.Context) error { return nil }

// ProcessRecord adds one to the word's count and emits the count.
func (Counter) ProcessRecord(ctx sdk.Context, rec sdk.Record) error {
	n, err := sdk.GetInt64(ctx.State(), rec.Key)
	if err != nil {
		return err
	}
	n++
	sdk.PutInt64(ctx.State(), rec.Key, n)
	return ctx.Produce(Counts, sdk.Record{Key: rec.Key, Value: strconv.AppendInt(nil, n, 10)})
}

// ProcessTimer implements sdk.Operator.
func (Counter) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

// ParseCount reads a count from the output topic.
func ParseCount(v []byte) (int64, error) { return strconv.ParseInt(string(v), 10, 64) }
