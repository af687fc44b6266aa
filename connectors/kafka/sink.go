package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/sdk"
)

// retryPause is how long Flush waits before producing failed records again.
const retryPause = 50 * time.Millisecond

// Sink is the Kafka sink operator (see SinkConfig and the package
// documentation). The runtime calls its methods on the instance's
// goroutine; franz-go calls its promise on its own goroutines, hence the
// mutex around the failed records.
type Sink struct {
	cfg SinkConfig

	op          string
	deadLetters string
	log         *slog.Logger
	health      *health
	cl          *kgo.Client
	ctx         context.Context // of the produced records: cancelled by Close
	cancel      context.CancelFunc
	promise     func(*kgo.Record, error)

	closeErr error // what Close could not deliver
	closed   bool  // exactly-once: Close ran

	// Exactly-once (sink_eo.go).
	eo      bool
	base    []kgo.Opt // options of every client: brokers, hooks, security
	group   int       // the instance's first key group, where its state goes
	pool    string    // "<prefix>.<group>": its transactional ids are "<pool>.<k>"
	slots   []*txnSlot
	open    *txnSlot // the transaction records go to; nil until the first record after a barrier
	cursor  int      // where the search for a free id starts
	commits uint64   // transactions committed, to order them
	adopted map[string]txnEntry
	adm     *kgo.Client // for requests to transaction coordinators
	coord   txnCoordinator

	mu       sync.Mutex
	retry    []*kgo.Record // failed with a retriable error: produced again by Flush
	rejected []rejection   // rejected for good: dead-lettered by the next ProcessRecord
	lastErr  error
}

// rejection is a record the brokers will never take.
type rejection struct {
	rec *kgo.Record
	err error
}

var (
	_ sdk.Operator  = (*Sink)(nil)
	_ sdk.Flusher   = (*Sink)(nil)
	_ sdk.Committer = (*Sink)(nil)
	_ sdk.Closer    = (*Sink)(nil)
)

// NewSink checks cfg and returns the factory of a Kafka sink operator.
func NewSink(cfg SinkConfig) (sdk.Factory, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	return func() sdk.Operator { return &Sink{cfg: cfg} }, nil
}

// Metadata implements sdk.Operator.
func (s *Sink) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: s.cfg.Name, Inputs: s.cfg.Inputs, Parallelism: s.cfg.Parallelism, KeyGroups: s.cfg.KeyGroups}
}

// Init creates the producer; it does not wait for the brokers. Under
// exactly-once it prepares the pool of transactional producers instead,
// and does contact the brokers: it fences every transactional id of the
// pool that State does not list as pending, which aborts transactions
// prepared after the checkpoint State was restored from (see
// docs/kafka.md "Exactly-once"). It then fails, with an error wrapping
// sdk.ErrTransient, if the brokers cannot be reached within
// CommitTimeout.
func (s *Sink) Init(ctx sdk.Context) error {
	s.op = ctx.Instance().Operator
	s.deadLetters = sdk.DeadLetterStream(s.op)
	s.log = ctx.Logger()
	s.health = new(health)
	opts, err := clientOptions(s.cfg.Brokers, s.health, s.cfg.Security)
	if err != nil {
		return fmt.Errorf("kafka sink %q: %w", s.op, err)
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if ctx.Instance().Guarantee == sdk.ExactlyOnce {
		s.base = opts
		if err := s.initExactlyOnce(ctx, slices.Concat(opts, s.cfg.ClientOptions)); err != nil {
			s.closeExactlyOnce()
			s.cancel()
			return err
		}
		return nil
	}
	opts = append(opts, kgo.DefaultProduceTopic(s.cfg.Topic))
	if s.cfg.MaxBufferedRecords > 0 {
		opts = append(opts, kgo.MaxBufferedRecords(s.cfg.MaxBufferedRecords))
	}
	cl, err := kgo.NewClient(append(opts, s.cfg.ClientOptions...)...)
	if err != nil {
		return fmt.Errorf("kafka sink %q: %w", s.op, err)
	}
	s.cl = cl
	s.promise = s.onResult
	return nil
}

// ProcessRecord encodes rec and hands it to the producer, which sends it
// asynchronously; it blocks only while MaxBufferedRecords records wait for
// acknowledgement. A record that does not encode goes to the dead-letter
// stream. Under exactly-once the record goes to the open transaction (the
// first record after a barrier begins one); when every transactional id
// holds a transaction waiting for its checkpoint it returns an error
// wrapping sdk.ErrTransient and ErrPoolExhausted, and when the open
// transaction was lost one wrapping ErrTransactionLost.
func (s *Sink) ProcessRecord(ctx sdk.Context, rec sdk.Record) error {
	if err := s.deadLetterRejected(ctx); err != nil {
		return err
	}
	kr, err := s.cfg.Encode(rec)
	if err != nil || kr == nil {
		if err == nil {
			err = errors.New("Encode returned no record")
		}
		dl := rec
		dl.Headers = append(append([]sdk.Header(nil), rec.Headers...),
			sdk.Header{Key: HeaderTopic, Value: s.cfg.Topic},
			sdk.Header{Key: sdk.HeaderError, Value: "encode: " + err.Error()},
			sdk.Header{Key: sdk.HeaderOperator, Value: s.op})
		return ctx.Produce(s.deadLetters, dl)
	}
	if s.eo {
		if s.closed {
			return s.closeErr
		}
		return s.produceTxn(kr)
	}
	s.cl.Produce(s.ctx, kr, s.promise)
	return nil
}

// onResult is the producer's promise.
func (s *Sink) onResult(r *kgo.Record, err error) {
	if err == nil {
		return
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, kgo.ErrClientClosed) {
		return // closing: Close reports what was not acknowledged
	}
	s.mu.Lock()
	if permanent(err) {
		s.rejected = append(s.rejected, rejection{r, err})
	} else {
		s.retry = append(s.retry, r)
		s.lastErr = err
	}
	s.mu.Unlock()
}

// permanent reports whether the brokers will never accept the record.
func permanent(err error) bool {
	return errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge) ||
		errors.Is(err, kerr.InvalidRecord) || errors.Is(err, kerr.CorruptMessage) ||
		errors.Is(err, kerr.InvalidTopicException)
}

// deadLetterRejected sends the records the brokers rejected to the
// dead-letter stream.
func (s *Sink) deadLetterRejected(ctx sdk.Context) error {
	s.mu.Lock()
	rs := s.rejected
	s.rejected = nil
	s.mu.Unlock()
	for i, r := range rs {
		dl := sdk.Record{Key: r.rec.Key, Value: r.rec.Value, EventTime: r.rec.Timestamp}
		for _, h := range r.rec.Headers {
			dl.Headers = append(dl.Headers, sdk.Header{Key: h.Key, Value: string(h.Value)})
		}
		dl.Headers = append(dl.Headers,
			sdk.Header{Key: HeaderTopic, Value: r.rec.Topic},
			sdk.Header{Key: sdk.HeaderError, Value: "produce: " + r.err.Error()},
			sdk.Header{Key: sdk.HeaderOperator, Value: s.op})
		if err := ctx.Produce(s.deadLetters, dl); err != nil {
			s.mu.Lock()
			s.rejected = append(rs[i:], s.rejected...)
			s.mu.Unlock()
			return err
		}
	}
	return nil
}

// Flush implements sdk.Flusher: it waits until the brokers have
// acknowledged every record handed to the producer, producing again those
// that failed, for at most FlushTimeout. When that is not enough it
// returns an error wrapping sdk.ErrTransient: the runtime records it in the
// instance's status, does not count what fed the sink as delivered, and
// flushes again at the next commit.
//
// Under exactly-once Flush does nothing: PreCommit flushes at the barrier.
func (s *Sink) Flush(ctx sdk.Context) error {
	if s.eo || s.cl == nil {
		return s.closeErr // closed before a restart: the runtime commits once more
	}
	return s.flush(ctx, s.cfg.FlushTimeout)
}

// PreCommit implements sdk.Committer. Under exactly-once it flushes the
// open transaction (waiting at most FlushTimeout for the brokers'
// acknowledgements), records its transactional id, producer id and epoch
// in State as pending for checkpoint, and leaves it open: the next record
// begins a new transaction on another id. On error the transaction stays
// open and the next PreCommit takes it (with the records after this
// barrier). Under the other guarantees it flushes like Flush.
func (s *Sink) PreCommit(ctx sdk.Context, checkpoint uint64) error {
	if !s.eo {
		return s.Flush(ctx)
	}
	if s.closed {
		return s.closeErr
	}
	return s.preCommitTxn(ctx, checkpoint)
}

// Commit implements sdk.Committer. Under exactly-once it commits every
// transaction State lists as prepared for checkpoint or an earlier one:
// through its producer, or, when the producer is gone (after a restore),
// by sending EndTxn with the producer id and epoch kept in State to the
// transaction coordinator; a transaction already committed counts as
// committed. A transaction that can no longer be committed gives an
// error wrapping ErrTransactionLost (once; it is forgotten). Other errors
// wrap sdk.ErrTransient and leave the transaction pending for the next
// Commit. Under the other guarantees it does nothing.
func (s *Sink) Commit(ctx sdk.Context, checkpoint uint64) error {
	if !s.eo {
		return nil
	}
	if s.closed {
		return s.closeErr
	}
	return s.commitTxns(ctx, checkpoint)
}

func (s *Sink) flush(ctx context.Context, timeout time.Duration) error {
	fctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		s.mu.Lock()
		retry := s.retry
		s.retry = nil
		s.mu.Unlock()
		for _, r := range retry {
			s.cl.Produce(s.ctx, r, s.promise)
		}
		if err := s.cl.Flush(fctx); err != nil {
			return s.unavailable(fmt.Errorf("%d records not acknowledged within %v", s.cl.BufferedProduceRecords(), timeout))
		}
		s.mu.Lock()
		failed, rejected, last := len(s.retry), len(s.rejected), s.lastErr
		s.mu.Unlock()
		if failed == 0 {
			if rejected > 0 {
				return fmt.Errorf("kafka sink %q: %w: %d records; they go to the dead-letter stream with the next record", s.op, ErrRejected, rejected)
			}
			return nil
		}
		select {
		case <-fctx.Done():
			return s.unavailable(fmt.Errorf("%d records failed: %w", failed, last))
		case <-time.After(retryPause):
		}
	}
}

// unavailable wraps err as a transient failure, naming the broker outage
// when there is one; a refusal of the client's credentials or certificate
// is not transient.
func (s *Sink) unavailable(err error) error {
	if r := s.health.refused(); r != nil {
		return fmt.Errorf("kafka sink %q: %w (%v)", s.op, r, err)
	}
	if h := s.health.unavailable(); h != nil {
		return fmt.Errorf("kafka sink %q: %w: %w (%v)", s.op, sdk.ErrTransient, h, err)
	}
	return fmt.Errorf("kafka sink %q: %w: %w", s.op, sdk.ErrTransient, err)
}

// Close implements sdk.Closer: it waits up to CloseTimeout for the records
// not yet acknowledged, then closes the producer. Under exactly-once it
// aborts the open transaction (what it holds comes again after a restore)
// and leaves the pending ones for Commit after a restore.
func (s *Sink) Close(sdk.Context) error {
	if s.eo {
		if !s.closed {
			s.closed = true
			s.closeErr = fmt.Errorf("kafka sink %q: closed", s.op)
			s.closeExactlyOnce()
			s.cancel()
		}
		return nil
	}
	if s.cl == nil {
		return nil
	}
	// Not the instance's context: it is already cancelled when the node
	// stops, and the records must still go out.
	err := s.flush(context.Background(), s.cfg.CloseTimeout)
	if errors.Is(err, ErrRejected) {
		err = nil // they were logged by the runtime; nothing more to do here
	}
	if err != nil {
		s.log.Error("kafka sink closed with records not acknowledged; they are replayed only under at-least-once delivery", "error", err)
		s.closeErr = fmt.Errorf("kafka sink %q: closed: %w", s.op, err)
	}
	s.cancel()
	s.cl.Close()
	s.cl = nil
	return nil
}

// ProcessTimer implements sdk.Operator.
func (s *Sink) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

// EncodeRaw is the default SinkConfig.Encode: the record's key, value and
// headers, with its event time as the Kafka timestamp.
func EncodeRaw(rec sdk.Record) (*kgo.Record, error) {
	kr := &kgo.Record{Key: rec.Key, Value: rec.Value, Timestamp: rec.EventTime}
	if len(rec.Headers) > 0 {
		kr.Headers = make([]kgo.RecordHeader, len(rec.Headers))
		for i, h := range rec.Headers {
			kr.Headers[i] = kgo.RecordHeader{Key: h.Key, Value: []byte(h.Value)}
		}
	}
	return kr, nil
}
