package nexmark

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/codec"
	"github.com/sluicehq/sluice/sdk/stream"
)

// Query is one Nexmark query written on sdk/stream, with what a test or
// a benchmark needs to check it: the stream of its answers, how to read
// one, and its exact answer computed from the generator alone.
type Query struct {
	// Name is the query's ("q0", "q1", …), also its pipeline's name.
	Name string
	// Build returns the query's operators, the generator source first;
	// the answers go to the stream Output.
	Build func(Config) ([]sdk.Factory, error)
	// Output is the stream of the answers: "<name>-answers".
	Output string
	// Answer decodes an answer record.
	Answer func(sdk.Record) (Answer, error)
	// Expected computes the exact answer, independently of the
	// pipeline: plain Go over the generated events.
	Expected func(Config) []Answer
	// Updating says the answers are updates of a result per key (q4's
	// running average per category): what counts is, per key, the
	// answer with the highest Seq. Otherwise every answer counts, once.
	Updating bool
	// Summed says the answers are parts of a count per key (q12's
	// counts per processing-time window, Seq the window): what counts
	// is, per key, the sum of the answers' Text, each (key, Seq) once.
	// Expected has one answer per key, its sum.
	Summed bool
}

// Answer is one answer of a query, as text: Key says what it answers for
// (a window, an auction, a category; the whole answer for queries
// without one), Text the answer, and Seq, for updating queries, which
// update of its key it is.
type Answer struct {
	Key, Text string
	Seq       int64
}

// String returns "key: text".
func (a Answer) String() string { return a.Key + ": " + a.Text }

// Queries returns the queries on sdk/stream, by name (q5 and q8, written
// on the operators of sdk/window, have functions of their own: Q5, Q8).
func Queries() []Query {
	return []Query{q0Query(), q1Query(), q2Query(), q3Query(), q4Query(), q7Query(), q9Query(), q11Query(), q12Query(), q13Query(), q14Query(), q15Query(), q16Query(), q17Query(), q18Query(), q19Query(), q20Query(), q21Query(), q22Query()}
}

// QueryNamed returns the query called name.
func QueryNamed(name string) (Query, bool) {
	for _, q := range Queries() {
		if q.Name == name {
			return q, true
		}
	}
	return Query{}, false
}

// ErrWrongAnswer is returned by Check for answers that are not the exact
// answer.
var ErrWrongAnswer = errors.New("nexmark: wrong answer")

// Check compares a run's answers with the exact answer want (as
// Expected returns it): the same multiset of answers, or, for an
// updating query, per key the same latest answer. The error wraps
// ErrWrongAnswer and names the first differences.
func (q Query) Check(got, want []Answer) error {
	switch {
	case q.Updating:
		got, want = latest(got), latest(want)
	case q.Summed:
		var err error
		if got, err = summed(got); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrWrongAnswer, q.Name, err)
		}
	}
	if slices.Equal(hashes(got), hashes(want)) {
		return nil // the same multiset (but for a 64-bit hash collision)
	}
	g, w := texts(got), texts(want)
	missing, extra := minus(w, g), minus(g, w)
	return fmt.Errorf("%w: %s: %d answers, want %d: missing %d (first: %q), unexpected or duplicated %d (first: %q)",
		ErrWrongAnswer, q.Name, len(g), len(w), len(missing), missing[:min(len(missing), 3)], len(extra), extra[:min(len(extra), 3)])
}

// latest keeps, per key, the answer with the highest Seq.
func latest(as []Answer) []Answer {
	last := map[string]Answer{}
	for _, a := range as {
		if b, ok := last[a.Key]; !ok || a.Seq > b.Seq {
			last[a.Key] = a
		}
	}
	return slices.Collect(maps.Values(last))
}

// summed returns, per key, one answer: the sum of its answers' Text; an
// answer that is not a number, or a key and Seq twice, is an error.
func summed(as []Answer) ([]Answer, error) {
	sums := map[string]int64{}
	seen := map[Answer]bool{}
	for _, a := range as {
		n, err := strconv.ParseInt(a.Text, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("answer %q is not a count", a)
		}
		if k := (Answer{Key: a.Key, Seq: a.Seq}); seen[k] {
			return nil, fmt.Errorf("%s: two answers for %d", a.Key, a.Seq)
		} else {
			seen[k] = true
		}
		sums[a.Key] += n
	}
	out := make([]Answer, 0, len(sums))
	for k, n := range sums {
		out = append(out, Answer{Key: k, Text: strconv.FormatInt(n, 10)})
	}
	return out, nil
}

// hashes returns the answers' hashes, sorted: comparing them is much
// cheaper than comparing the sorted texts of millions of answers.
func hashes(as []Answer) []uint64 {
	out := make([]uint64, len(as))
	for i, a := range as {
		h := fnv.New64a()
		h.Write([]byte(a.String()))
		out[i] = h.Sum64()
	}
	slices.Sort(out)
	return out
}

// texts returns the answers as sorted strings.
func texts(as []Answer) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.String()
	}
	slices.Sort(out)
	return out
}

// minus returns the elements of the sorted a not in the sorted b (as
// multisets).
func minus(a, b []string) []string {
	var out []string
	for len(a) > 0 {
		switch {
		case len(b) == 0 || a[0] < b[0]:
			out, a = append(out, a[0]), a[1:]
		case a[0] == b[0]:
			a, b = a[1:], b[1:]
		default:
			b = b[1:]
		}
	}
	return out
}

// EventCodec is the codec of events between sdk/stream's stages:
// Event.Encode and Decode.
func EventCodec() codec.Codec[Event] {
	return codec.Codec[Event]{Name: "nexmark",
		Encode: func(dst []byte, e Event) ([]byte, error) { return e.Encode(dst), nil },
		Decode: func(b []byte) (Event, error) {
			e, err := Decode(b)
			if err != nil {
				return e, codec.NewDecodeError[Event]("nexmark", b, err)
			}
			return e, nil
		}}
}

// eventsCodec encodes a list of events: their number, then each one's
// length and encoding (uvarints).
func eventsCodec() codec.Codec[[]Event] {
	return codec.Codec[[]Event]{Name: "nexmark-list",
		Encode: func(dst []byte, es []Event) ([]byte, error) { return appendEvents(dst, es), nil },
		Decode: func(b []byte) ([]Event, error) {
			es, rest, err := decodeEvents(b)
			if err == nil && len(rest) > 0 {
				err = fmt.Errorf("%w: %d bytes after the list", errCorrupt, len(rest))
			}
			if err != nil {
				return nil, codec.NewDecodeError[[]Event]("nexmark-list", b, err)
			}
			return es, nil
		}}
}

func appendEvents(dst []byte, es []Event) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(es)))
	var enc []byte
	for _, e := range es {
		enc = e.Encode(enc[:0])
		dst = append(binary.AppendUvarint(dst, uint64(len(enc))), enc...)
	}
	return dst
}

func decodeEvents(b []byte) ([]Event, []byte, error) {
	n, w := binary.Uvarint(b)
	if w <= 0 || n > uint64(len(b)) {
		return nil, nil, fmt.Errorf("%w: bad list length", errCorrupt)
	}
	b = b[w:]
	es := make([]Event, 0, n)
	for range n {
		l, w := binary.Uvarint(b)
		if w <= 0 || l > uint64(len(b)-w) {
			return nil, nil, fmt.Errorf("%w: truncated list", errCorrupt)
		}
		e, err := Decode(b[w : w+int(l)])
		if err != nil {
			return nil, nil, err
		}
		es, b = append(es, e), b[w+int(l):]
	}
	return es, b, nil
}

// events starts a query's pipeline: the generator source, its events
// decoded by the stage after it (in an operator of its own: the event
// codec can fail, so it does not run in the source's Poll).
func events(name string, c Config) (*stream.Pipeline, *stream.Stream[Event], stream.Option) {
	c = c.WithDefaults()
	p := stream.New(name)
	return p, stream.FromSource(p, "source", c.Generator().Source(c.Events, c.Parallelism, c.Batch, c.Rate), EventCodec()),
		stream.Parallelism(c.Parallelism)
}

// answersOf returns the stream of a query's answers.
func answersOf(query string) string { return query + "-answers" }

// generated calls f with every event of c's run.
func generated(c Config, f func(Event)) {
	c = c.WithDefaults()
	gen := c.Generator()
	for i := range c.Events {
		f(gen.Event(i))
	}
}

// isBid reports whether e is a bid.
func isBid(e Event) bool { return e.Kind == Bid }

// bidText formats a bid as an answer: "auction bidder price time".
func bidText(e Event) string {
	return fmt.Sprintf("%d %d %d %s", e.Auction, e.Bidder, e.Price, e.DateTime.UTC().Format("15:04:05.000000"))
}

// byTime orders events by time (unique per event in a run).
func byTime(a, b Event) int { return a.DateTime.Compare(b.DateTime) }

// joinTexts joins formatted items with ",".
func joinTexts[T any](xs []T, f func(T) string) string {
	ss := make([]string, len(xs))
	for i, x := range xs {
		ss[i] = f(x)
	}
	return strings.Join(ss, ",")
}

// compareBids orders bids for a winner: the highest price first, then
// the earliest (Flink's q9: ORDER BY price DESC, dateTime ASC).
func compareBids(a, b Event) int {
	return cmp.Or(cmp.Compare(b.Price, a.Price), a.DateTime.Compare(b.DateTime))
}

// appendString appends s's length (a uvarint) and bytes.
func appendString(dst []byte, s string) []byte {
	return append(binary.AppendUvarint(dst, uint64(len(s))), s...)
}

// cutString reads a string appendString wrote and returns what follows.
func cutString(b []byte) (string, []byte, error) {
	n, w := binary.Uvarint(b)
	if w <= 0 || n > uint64(len(b)-w) {
		return "", nil, fmt.Errorf("%w: truncated string", errCorrupt)
	}
	return string(b[w : w+int(n)]), b[w+int(n):], nil
}

// appendVarints appends vs as varints.
func appendVarints(dst []byte, vs ...int64) []byte {
	for _, v := range vs {
		dst = binary.AppendVarint(dst, v)
	}
	return dst
}

// readVarints reads len(vs) varints of b into vs, all of b; false if b
// is not that.
func readVarints(b []byte, vs []int64) bool {
	for i := range vs {
		x, w := binary.Varint(b)
		if w <= 0 {
			return false
		}
		vs[i], b = x, b[w:]
	}
	return len(b) == 0
}
