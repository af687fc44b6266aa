// Package stream builds typed pipelines that compile to ordinary Sluice
// operators: the compiler checks that the stages fit, codecs (sdk/codec)
// turn values into record bytes where they cross between operators, and
// Build returns sdk.Factory values that run with node.Run, node.Start and
// sdktest.NewGraph, show in `sluice graph` and the console, and are
// deployed, scaled and killed one operator at a time like hand-written
// ones.
//
//	p := stream.New("lengths")
//	lines := stream.From(p, "lines", codec.String())
//	words := stream.FlatMap(lines, "split", func(l string, emit func(string)) {
//		for _, w := range strings.Fields(l) {
//			emit(w)
//		}
//	}, codec.String())
//	lens := stream.Map(words, "length", func(w string) int64 { return int64(len(w)) }, codec.Int64())
//	stream.Output(lens, "word-lengths")
//	factories, err := p.Build() // one operator, "lengths.split": lines → word-lengths
//
// Stages are added by functions rather than methods where a stage makes
// a new type (Go methods take no type parameters of their own): From and
// FromSource start a path, Map, Filter and FlatMap transform it, KeyBy
// partitions it by key, Aggregate folds a keyed stream's windows
// (sdk/window), Process runs a typed keyed operator with state (sdk/state)
// and timers, To and Output (ToKeyed and OutputKeyed for keyed streams)
// end it. Every stage has a name, unique in its pipeline.
//
// # Operators, streams and chaining
//
// Consecutive stateless stages (Map, Filter, FlatMap, and To and Output
// after them) chain: they run in one operator, each handing its values to
// the next as Go values through closures built once per instance, with no
// record, copy, encoding or mailbox between them (what Flink calls
// operator chaining); they chain to a Process before them too. A stage
// chains to the stage before it when that one hands on Go values (Map,
// Filter, FlatMap, Process) and the stage sets no option
// that operator has otherwise (Parallelism, KeyGroups, Restart), nor
// Unchained. Where a stage does not chain, an edge is made: the stage
// before it encodes its values with its codec and produces them to the
// Sluice stream "<pipeline>.<stage before>", which the operator of the
// stage, "<pipeline>.<stage>", reads (with shuffle routing) and decodes.
// An operator is named after the first stage of its chain. A stage read by
// several stages hands each value to all of them in turn; where some of
// them do not chain, the value is encoded once.
//
// KeyBy chains too, as the end of its operator's chain: it encodes the
// key with its codec into the record's Key and the value into its Value
// and produces them to "<pipeline>.<KeyBy stage>", which each stage
// reading the keyed stream reads in an operator of its own with group-by
// routing on the key's bytes; ToKeyed and OutputKeyed write the same
// records to their streams.
//
// Aggregate is an operator of its own, sdk/window's window operator
// "<pipeline>.<stage>" over the keyed stream, its accumulators in State;
// it writes its results (key, encoded result, bounds in headers) to
// "<pipeline>.<stage>", or straight to the stream of a To or Output that
// is all that reads it. A stage after it starts an operator reading those
// results, as a stage after From does.
//
// Process is an operator of its own too, "<pipeline>.<stage>", reading the
// keyed stream with group-by routing: its Processor's functions get each
// key's values in order, on one instance, with State in the key's key
// group (keep per-key state in a stream.Value, one value per key, or a
// state.Map keyed by the key), named
// timers of both kinds per key (Context.SetTimer, SetEventTimer) and
// Context.Emit to hand values on to the stages chained after it.
//
// IntervalJoin and WindowJoin are operators of their own too,
// "<pipeline>.<stage>", reading two keyed streams (of one key type and
// key codec) with group-by routing, so a key's values of both sides meet
// on one instance. IntervalJoin pairs a left value l and a right value r
// of a key when l.time+lower ≤ r.time ≤ l.time+upper (Flink's interval
// join), as soon as the later one arrives; WindowJoin pairs the values of
// a key in the same tumbling or hopping window when the watermark closes
// it. Both keep each side's value bytes in State and remove them with
// event-time timers as the watermark passes the last time they could
// still join (so, like Aggregate, they need event times and watermarks);
// a value behind the watermark (interval) or whose windows have all
// closed (window) is late and goes, as it arrived, to
// "<pipeline>.<stage>.late", joining nothing.
//
// In all, the stages that chain are Map, Filter, FlatMap, KeyBy, To,
// Output, ToKeyed and OutputKeyed, after Map, Filter, FlatMap, Process,
// IntervalJoin or WindowJoin (KeyBy's and the ends' after KeyBy too);
// From, Aggregate, Process and the joins never chain to what is before them, and nothing chains to From or
// Aggregate, with one exception: the stage right after a FromSource runs
// in the source's operator (keeping the source's name and settings,
// writing what the chain writes, its records handed down the chain as
// the source produces them) when it is the source's only reader, sets no
// option, the source's codec is codec.Bytes or codec.String (one that can
// fail would fail the source's Poll over and over instead of
// dead-lettering the record), and the source implements no optional
// interface but sdk.Resumable and sdk.Closer (a Kafka source, Replayable
// and a Committer, keeps its own operator). The word count is two operators:
//
//	From(sentences) → FlatMap(split) → KeyBy(by-word)   "wc.split"  (sentences → wc.by-word)
//	Process(count) → Map(text) → Output(counts)         "wc.count"  (wc.by-word, group-by → counts)
//
// A stage after From starts an operator reading From's stream. FromSource
// and To take a source and a sink operator (connectors) as they are: the
// pipeline reads the source's one output stream and writes the sink's one
// input stream, whatever their names, and Build returns them with the
// pipeline's operators.
//
// # Bad input
//
// Type mismatches between stages are compile errors. A record that does
// not decode fails its attempt with an error naming the operator, the
// stage and the stream and wrapping the codec's *codec.DecodeError and
// sdk.ErrBadRecord: the runtime undoes the attempt and sends the record
// to "<operator>.deadletter" at once (no restart, no retry:
// sluice-attempts 1) with that text in its sluice-error header, and the
// records after it go on. Build refuses, with a
// *StageError naming the stage, a pipeline with a stage whose output goes
// nowhere (ErrUnconsumed), a name used twice (ErrDuplicate), a nil
// function or codec, a bad name, a source or sink with other than one
// output or input, or a path writing the stream it reads (ErrInvalid);
// an empty pipeline is ErrEmpty.
//
// # Tests
//
// A built pipeline runs in memory with sdktest.NewGraph, with typed input
// and output: Stream.Send (SendAt, with an event time for windows)
// encodes values into the stream a From reads, Out.Take decodes what
// reached an Output or a To.
package stream
