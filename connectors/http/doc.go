// Package http connects Sluice to HTTP: a webhook source that runs an
// HTTP(S) server taking POSTed batches of records (Source, SourceConfig),
// and a sink that POSTs batches of records to a URL (Sink, SinkConfig).
//
// # Source
//
// Instance i of a source listens on SourceConfig.Listen's port + i (port
// 0: a free port each, which Stats.Addr reports); put a load balancer in
// front of several instances, or run one. A request is authenticated by a
// bearer token (compared in constant time) or a verified client
// certificate, else refused 401. Its body is a JSON array (Content-Type
// application/json) or JSON lines (application/x-ndjson): each element or
// line is a record whose value is its JSON text. A malformed body is 400
// naming the record, a body over MaxBodyBytes or a record over
// MaxRecordBytes 413, another content type 415. The handler hands the
// records to Poll through a bounded queue (QueueRequests): a full queue
// answers 429, a source shutting down 503, both with Retry-After.
//
//	request ─ auth ─ parse ─ queue (429 when full) ─ Poll: Produce ─ durable ─ 200
//
// # Guarantees
//
// A request is answered 200 only once its records are durable under the
// guarantee in force: under exactly-once when the checkpoint whose
// barrier follows them completes (Commit); under at-least-once when the
// runtime reports them durable downstream (sdk.Replayable's Durable; a
// rewind produces them again); without a guarantee as soon as Poll
// produced them. Until then the client waits; if the instance stops or
// rolls back first, the client gets 503 (or a broken connection) and must
// send the request again. So from the client's side delivery is
// at-least-once: a request answered 503 or cut off may have been produced
// by a checkpoint that completed after all. A client that sends an
// Idempotency-Key header makes it exactly once: the source remembers the
// keys it produced in State (in the same Poll as the records, so a
// restored checkpoint remembers exactly the keys of the records it
// holds) for IdempotencyWindow (24 h), and a request repeating one is
// answered 200 "duplicate" without producing anything. The source keeps
// no position: under exactly-once it is sdk.Resumable with nothing to
// resume but the keys, the clients holding what was not acknowledged.
//
// # Sink
//
// A sink instance gathers records into batches (BatchRecords,
// BatchBytes) and POSTs each as JSON lines (one record value per line,
// Content-Type application/x-ndjson) with an Idempotency-Key header. A
// batch answered 5xx, 429 or 408, timed out or not connected is sent
// again after an exponential backoff (MinBackoff to MaxBackoff, or the
// answer's Retry-After) up to MaxAttempts times, after which Flush or
// Commit fails with ErrDelivery (transient: the batch is kept and sent
// again at the next). A batch answered another 4xx DeadLetterAfter times
// goes to the operator's dead-letter stream (sdk.DeadLetterStream), one
// dead letter per record with the status in sdk.HeaderError.
//
// Without exactly-once up to MaxInFlight batches are in flight at once,
// and Flush (before each commit of state) sends the open batch and waits
// for every batch in flight. Under exactly-once the records are written
// to a transaction (connect.TwoPhase) kept in State at the barrier, and
// sent when the checkpoint completes, each batch with Idempotency-Key
// "<writer>-<checkpoint>-<batch>" (writer: the operator and the
// instance's first key group). A commit repeated after a restore sends
// the same batches with the same keys: HTTP itself delivers at least
// once, and a receiver that drops a key it has seen (this package's
// source does) gets every record once.
//
//	src, err := http.NewSource(http.SourceConfig{Name: "hook", Output: "events",
//		Listen: ":8080", Tokens: []string{os.Getenv("HOOK_TOKEN")}})
//	sink, err := http.NewSink(http.SinkConfig{Name: "post", Inputs: []sdk.Input{{Stream: "alerts"}},
//		URL: "https://alerts.example.com/ingest", Token: os.Getenv("ALERTS_TOKEN")})
package http
