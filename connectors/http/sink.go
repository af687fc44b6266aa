package http

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/connect"
)

// txnPrefix starts the exactly-once sink's state keys (connect.TwoPhase's).
const txnPrefix = "http/"

// Sink is the HTTP sink operator (see SinkConfig and the package
// documentation). The runtime calls its methods on the instance's
// goroutine; batches in flight are sent by goroutines the sink owns,
// which hand their outcomes back through done (under mu).
type Sink struct {
	cfg SinkConfig

	op, writer  string
	deadLetters string
	eo          bool
	send        *sender
	ctx         context.Context // of the requests: cancelled by Close
	cancel      context.CancelFunc

	open  *batch   // the batch being filled
	retry []*batch // batches that failed MaxAttempts times, sent again by Flush
	seq   uint64   // batches made (their keys)
	epoch string   // this incarnation, in the keys of batches outside checkpoints
	slots chan struct{}
	wg    sync.WaitGroup

	mu   sync.Mutex
	done []result // outcomes not yet handled on the instance's goroutine

	rejected []deadLetter // produced to the dead-letter stream by the next ProcessRecord

	txn   connect.TwoPhase // exactly-once
	txrec []sdk.Record     // exactly-once: the open transaction's records
}

// deadLetter is a record rejected by the receiver, and why. The runtime
// takes produced records only from ProcessRecord, so Flush and Commit
// keep them for the next one.
type deadLetter struct {
	rec sdk.Record
	why string
}

// result is a batch's outcome.
type result struct {
	b *batch
	outcome
}

var (
	_ sdk.Committer        = (*Sink)(nil)
	_ sdk.Flusher          = (*Sink)(nil)
	_ sdk.Closer           = (*Sink)(nil)
	_ connect.Transactions = (*sinkTxns)(nil)
	_ sdk.Operator         = (*Sink)(nil)
)

// NewSink checks cfg and returns the factory of an HTTP sink.
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

// Init prepares the client (TLS files are read here) and, under
// exactly-once, reads the transactions State lists.
func (s *Sink) Init(ctx sdk.Context) error {
	info := ctx.Instance()
	s.op, s.deadLetters = info.Operator, sdk.DeadLetterStream(info.Operator)
	s.writer = connect.WriterName(info.Operator, info.FirstGroup)
	s.eo = info.Guarantee == sdk.ExactlyOnce
	s.epoch = strconv.FormatInt(time.Now().UnixNano(), 36)
	s.slots = make(chan struct{}, s.cfg.MaxInFlight)
	send, err := newSender(s.cfg)
	if err != nil {
		return fmt.Errorf("http sink %q: %w", s.op, err)
	}
	s.send = send
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if s.eo {
		if err := s.txn.Init(ctx, &sinkTxns{s}, txnPrefix, []byte(s.cfg.URL)); err != nil {
			return fmt.Errorf("http sink %q: %w", s.op, err)
		}
	}
	return nil
}

// ProcessRecord adds rec to the open batch (under exactly-once, to the
// open transaction); a full batch is sent (it blocks while MaxInFlight
// batches are in flight). A value that is not JSON goes to the
// dead-letter stream, and so do the records of batches rejected since the
// last call.
func (s *Sink) ProcessRecord(ctx sdk.Context, rec sdk.Record) error {
	if err := s.deadLetterRejected(ctx); err != nil {
		return err
	}
	// A batch that failed MaxAttempts times is sent again before more
	// records are taken (dispatch waits for a slot): memory stays bounded
	// while the receiver is down, and the error surfaces in Flush.
	_ = s.handleDone()
	if err := s.resend(ctx); err != nil {
		return err
	}
	if s.eo {
		return s.txn.Write(ctx, rec)
	}
	if s.open == nil {
		s.open = s.newBatch("")
	}
	if err := s.open.add(rec); err != nil {
		return s.deadLetter(ctx, rec, err.Error())
	}
	if len(s.open.recs) >= s.cfg.BatchRecords || len(s.open.body) >= s.cfg.BatchBytes {
		b := s.open
		s.open = nil
		return s.dispatch(ctx, b)
	}
	return nil
}

// newBatch starts a batch; key "" gives it the next key outside
// checkpoints: "<writer>-<incarnation>-<seq>".
func (s *Sink) newBatch(key string) *batch {
	if key == "" {
		s.seq++
		key = fmt.Sprintf("%s-%s-%d", s.writer, s.epoch, s.seq)
	}
	return &batch{key: key}
}

// dispatch sends b on a goroutine of the sink, once a slot is free.
func (s *Sink) dispatch(ctx context.Context, b *batch) error {
	select {
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		s.retry = append([]*batch{b}, s.retry...)
		return ctx.Err()
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		o := s.send.deliver(s.ctx, b)
		s.mu.Lock()
		s.done = append(s.done, result{b, o})
		s.mu.Unlock()
		<-s.slots
	}()
	return nil
}

// deadLetterRejected produces the records the receiver rejected to the
// dead-letter stream.
func (s *Sink) deadLetterRejected(ctx sdk.Context) error {
	for len(s.rejected) > 0 {
		if err := s.deadLetter(ctx, s.rejected[0].rec, s.rejected[0].why); err != nil {
			return err
		}
		s.rejected = s.rejected[1:]
	}
	return nil
}

// reject keeps recs for the dead-letter stream.
func (s *Sink) reject(recs []sdk.Record, why string) {
	for _, rec := range recs {
		s.rejected = append(s.rejected, deadLetter{rec, why})
	}
}

// resend dispatches the batches kept after failing.
func (s *Sink) resend(ctx context.Context) error {
	for len(s.retry) > 0 {
		b := s.retry[0]
		s.retry = s.retry[1:]
		if err := s.dispatch(ctx, b); err != nil {
			return fmt.Errorf("http sink %q: %w", s.op, err)
		}
	}
	return nil
}

// handleDone takes the outcomes of the batches sent: rejected ones are
// kept for the dead-letter stream, failed ones for Flush.
func (s *Sink) handleDone() error {
	s.mu.Lock()
	done := s.done
	s.done = nil
	s.mu.Unlock()
	var errs []error
	for _, r := range done {
		switch {
		case r.rejected != "":
			s.reject(r.b.recs, r.rejected)
		case r.err != nil:
			s.retry = append(s.retry, r.b)
			errs = append(errs, r.err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("http sink %q: %w", s.op, errors.Join(errs...))
	}
	return nil
}

// deadLetter sends rec to the operator's dead-letter stream.
func (s *Sink) deadLetter(ctx sdk.Context, rec sdk.Record, why string) error {
	dl := rec
	dl.Headers = append(append([]sdk.Header(nil), rec.Headers...),
		sdk.Header{Key: sdk.HeaderError, Value: why}, sdk.Header{Key: sdk.HeaderOperator, Value: s.op})
	if err := ctx.Produce(s.deadLetters, dl); err != nil {
		return fmt.Errorf("http sink %q: dead letter: %w", s.op, err)
	}
	s.cfg.Stats.DeadLetters.Add(1)
	return nil
}

// Flush implements sdk.Flusher (without exactly-once): it sends the open
// batch and the ones that failed before, and waits for every batch in
// flight. A batch still failing is kept and Flush returns ErrDelivery
// (transient).
func (s *Sink) Flush(ctx sdk.Context) error {
	if s.eo {
		return nil
	}
	if s.open != nil {
		s.retry = append(s.retry, s.open)
		s.open = nil
	}
	if err := s.resend(ctx); err != nil {
		return err
	}
	s.wg.Wait()
	return s.handleDone()
}

// PreCommit implements sdk.Committer: the records since the last barrier
// become checkpoint's transaction, kept in State.
func (s *Sink) PreCommit(ctx sdk.Context, checkpoint uint64) error {
	if err := s.txn.PreCommit(ctx, checkpoint); err != nil {
		return fmt.Errorf("http sink %q: %w", s.op, err)
	}
	return nil
}

// Commit implements sdk.Committer: the transactions of checkpoint and
// earlier ones are sent (again after a restore, with the same keys).
func (s *Sink) Commit(ctx sdk.Context, checkpoint uint64) error {
	if err := s.txn.Commit(ctx, checkpoint); err != nil {
		return fmt.Errorf("http sink %q: %w", s.op, err)
	}
	return nil
}

// Close implements sdk.Closer: requests in flight are cancelled (what
// they carried is sent again after the restart: it is in no committed
// state), and the client's connections closed. Safe to call twice.
func (s *Sink) Close(sdk.Context) error {
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
	if s.send != nil {
		s.send.close()
		s.send = nil
	}
	return nil
}

// ProcessTimer implements sdk.Operator.
func (s *Sink) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

// sinkTxns is the exactly-once sink's connect.Transactions: a
// transaction is its records, kept in State as batches at PreCommit and
// POSTed at Commit.
type sinkTxns struct{ s *Sink }

// Begin starts an empty transaction.
func (t *sinkTxns) Begin(sdk.Context) error { t.s.txrec = nil; return nil }

// Write adds rec to the transaction; a value that is not JSON goes to the
// dead-letter stream.
func (t *sinkTxns) Write(ctx sdk.Context, rec sdk.Record) error {
	if !json.Valid(rec.Value) {
		return t.s.deadLetter(ctx, rec, "the value is not JSON")
	}
	t.s.txrec = append(t.s.txrec, rec)
	return nil
}

// PreCommit encodes the transaction's batches as its handle:
// per batch uvarint(len body) body (JSON lines).
func (t *sinkTxns) PreCommit(sdk.Context, uint64) ([]byte, error) {
	var handle []byte
	b := &batch{}
	flush := func() {
		if len(b.recs) > 0 {
			handle = binary.AppendUvarint(handle, uint64(len(b.body)))
			handle = append(handle, b.body...)
		}
		b = &batch{}
	}
	for _, rec := range t.s.txrec {
		if err := b.add(rec); err != nil {
			return nil, err // Write checked it
		}
		if len(b.recs) >= t.s.cfg.BatchRecords || len(b.body) >= t.s.cfg.BatchBytes {
			flush()
		}
	}
	flush()
	t.s.txrec = nil
	return handle, nil
}

// Commit POSTs the transaction's batches in order, each with key
// "<writer>-<checkpoint>-<batch>"; a batch rejected DeadLetterAfter times
// goes to the dead-letter stream, one that fails MaxAttempts times fails
// the commit (retried at the next completion, resending all its batches
// under the same keys).
func (t *sinkTxns) Commit(ctx sdk.Context, txn connect.Txn) error {
	h := txn.Handle
	for i := 0; len(h) > 0; i++ {
		n, m := binary.Uvarint(h)
		if m <= 0 || uint64(len(h)-m) < n {
			return fmt.Errorf("transaction of %s for checkpoint %d: %w", txn.Writer, txn.Checkpoint, connect.ErrCorrupt)
		}
		b := &batch{body: h[m : m+int(n)], key: fmt.Sprintf("%s-%d-%d", txn.Writer, txn.Checkpoint, i)}
		h = h[m+int(n):]
		b.recs = splitLines(b.body)
		o := t.s.send.deliver(ctx, b)
		switch {
		case o.err != nil:
			return o.err
		case o.rejected != "":
			t.s.reject(b.recs, o.rejected)
		}
	}
	return nil
}

// Abort has nothing to discard: nothing was sent.
func (t *sinkTxns) Abort(sdk.Context, connect.Txn) error { return nil }

// splitLines returns a batch body's lines as records (for dead letters
// and counts).
func splitLines(body []byte) []sdk.Record {
	var out []sdk.Record
	for len(body) > 0 {
		i := 0
		for i < len(body) && body[i] != '\n' {
			i++
		}
		out = append(out, sdk.Record{Value: body[:i]})
		body = body[min(i+1, len(body)):]
	}
	return out
}
