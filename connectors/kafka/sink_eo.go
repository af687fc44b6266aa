package kafka

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/sdk"
)

// The exactly-once sink writes the records between two checkpoint
// barriers in one Kafka transaction. A transaction stays open after its
// barrier until its checkpoint completes, while the records after the
// barrier go to the next one, so an instance has a pool of transactional
// producers, one per transactional id "<prefix>.<key group>.<k>"; k cycles
// through the pool. An id holds its transaction from the first record to
// Commit:
//
//	free ──first record──▶ open ──PreCommit(N)──▶ pending(N) ──Commit(≥N)──▶ committed
//	  ▲                                                                          │
//	  └─────────── Commit(≥M), M the first PreCommit after the commit ◀──────────┘
//
// A committed id becomes free only once a completed checkpoint's state no
// longer lists its transaction: a restore always restores such a state,
// so Commit after a restore never meets an id that has been used again,
// and an answer that the transaction cannot be committed always means it
// was lost. Only when no id is free does the sink take the committed id
// whose commit is oldest, with a fresh producer (its epoch bumped, so an
// old EndTxn can never commit the new transaction).
//
// After a restore, Init fences (InitProducerID) every id of the pool that
// the restored state does not list as pending, which aborts whatever was
// prepared after the restored checkpoint; Commit then commits the listed
// transactions by EndTxn with the producer id and epoch kept in state.

// slotState is where a transactional id of the pool stands.
type slotState uint8

const (
	slotFree      slotState = iota // may begin a transaction
	slotOpen                       // records are written to its transaction
	slotPending                    // prepared for a checkpoint: waits for Commit
	slotCommitted                  // committed; free once a completed checkpoint no longer lists it
)

// txnSlot is one transactional id of an instance's pool. Its fields are
// used on the instance's goroutine, but for acked (and err, under
// Sink.mu), which the producer's promise sets.
type txnSlot struct {
	id      string
	state   slotState
	cl      *kgo.Client // its producer; nil until used, and after a restore until reused
	entry   txnEntry    // pending: what PreCommit wrote to state
	release uint64      // committed: the first checkpoint whose PreCommit left it out of state; 0 until then
	seq     uint64      // committed: order of the commits, for reusing the oldest
	promise func(*kgo.Record, error)

	acked atomic.Int64 // records of its transaction the brokers acknowledged
	err   error        // guarded by Sink.mu: the first failure of a record of its transaction
}

// initExactlyOnce prepares the pool (see above); base are the options of
// every client.
func (s *Sink) initExactlyOnce(ctx sdk.Context, base []kgo.Opt) error {
	s.eo = true
	s.group = ctx.Instance().FirstGroup
	prefix := s.cfg.TransactionalIDPrefix
	if prefix == "" {
		prefix = "sluice." + s.op
	}
	s.pool = prefix + "." + strconv.Itoa(s.group)
	st := ctx.State()
	ts, err := readTxnState(st)
	if err != nil {
		return fmt.Errorf("kafka sink %q: read transactions from state: %w", s.op, err)
	}
	adm, err := kgo.NewClient(base...)
	if err != nil {
		return fmt.Errorf("kafka sink %q: %w", s.op, err)
	}
	s.adm, s.coord = adm, txnCoordinator{adm}

	// Fence every id of every pool this state knows of (and of our own)
	// but the pending ones: what they hold was prepared after the
	// restored checkpoint, or by a previous incarnation after its last
	// state commit.
	fctx, cancel := context.WithTimeout(ctx, s.cfg.CommitTimeout)
	defer cancel()
	pools := maps.Clone(ts.pools)
	pools[s.pool] = max(pools[s.pool], s.cfg.TransactionPool)
	fenced := 0
	for _, pool := range slices.Sorted(maps.Keys(pools)) {
		for k := range pools[pool] {
			id := txnID(pool, k)
			if _, pending := ts.entries[id]; pending {
				continue
			}
			if err := s.coord.fence(fctx, id, s.cfg.TransactionTimeout); err != nil {
				if errors.Is(err, kerr.InvalidTransactionTimeout) {
					return fmt.Errorf("kafka sink %q: TransactionTimeout %v: %w", s.op, s.cfg.TransactionTimeout, err)
				}
				return s.health.failure(fmt.Sprintf("kafka sink %q: fence transactional id %q", s.op, id), err)
			}
			fenced++
		}
	}
	st.Set([]byte(txnPoolPrefix+s.pool), poolValue(s.cfg.TransactionPool, s.group))

	s.slots = make([]*txnSlot, s.cfg.TransactionPool)
	for k := range s.slots {
		sl := &txnSlot{id: txnID(s.pool, k)}
		sl.promise = s.txnPromise(sl)
		if e, ok := ts.entries[sl.id]; ok {
			sl.state, sl.entry = slotPending, e
			delete(ts.entries, sl.id)
		}
		s.slots[k] = sl
	}
	s.adopted = ts.entries
	s.log.Info("kafka sink: exactly-once", "pool", s.pool, "size", s.cfg.TransactionPool, "fenced", fenced,
		"pending", s.countSlots(slotPending), "adopted", len(s.adopted))
	return nil
}

// countSlots returns the number of slots in state st.
func (s *Sink) countSlots(st slotState) int {
	n := 0
	for _, sl := range s.slots {
		if sl.state == st {
			n++
		}
	}
	return n
}

// txnPromise returns the promise of sl's records.
func (s *Sink) txnPromise(sl *txnSlot) func(*kgo.Record, error) {
	return func(r *kgo.Record, err error) {
		if err == nil {
			sl.acked.Add(1)
			return
		}
		if errors.Is(err, context.Canceled) || errors.Is(err, kgo.ErrClientClosed) {
			return // closing: the transaction is abandoned anyway
		}
		s.mu.Lock()
		if permanent(err) {
			s.rejected = append(s.rejected, rejection{r, err})
		} else if sl.err == nil {
			sl.err = err
		}
		s.mu.Unlock()
	}
}

// produceTxn hands kr to the open transaction, beginning one if needed.
func (s *Sink) produceTxn(kr *kgo.Record) error {
	if s.open == nil {
		sl, err := s.nextSlot()
		if err != nil {
			return err
		}
		if err := s.begin(sl); err != nil {
			return err
		}
		s.open = sl
	}
	s.mu.Lock()
	failed := s.open.err
	s.mu.Unlock()
	if failed != nil {
		return s.loseOpen(failed)
	}
	s.open.cl.Produce(s.ctx, kr, s.open.promise)
	return nil
}

// nextSlot picks the id of the next transaction: the next free one after
// the last used (k cycles), else the committed one whose commit is
// oldest; none when every id holds a pending transaction.
func (s *Sink) nextSlot() (*txnSlot, error) {
	n := len(s.slots)
	for i := range n {
		k := (s.cursor + i) % n
		if s.slots[k].state == slotFree {
			s.cursor = k + 1
			return s.slots[k], nil
		}
	}
	var oldest *txnSlot
	for _, sl := range s.slots {
		if sl.state == slotCommitted && (oldest == nil || sl.seq < oldest.seq) {
			oldest = sl
		}
	}
	if oldest != nil {
		// A new producer re-initialises the id: its epoch moves on, so a
		// Commit after a restore cannot commit the new transaction with
		// the old one's producer id and epoch.
		if oldest.cl != nil {
			oldest.cl.Close()
			oldest.cl = nil
		}
		s.log.Info("kafka sink: reusing a transactional id before a completed checkpoint confirmed its commit (see TransactionPool)", "transactional_id", oldest.id)
		return oldest, nil
	}
	var waiting []uint64
	for _, sl := range s.slots {
		if sl.state == slotPending {
			waiting = append(waiting, sl.entry.checkpoint)
		}
	}
	slices.Sort(waiting)
	return nil, fmt.Errorf("kafka sink %q: %w: %w: %d transactions wait for checkpoints %v to complete; records wait until a Commit frees one (TransactionPool is %d)",
		s.op, sdk.ErrTransient, ErrPoolExhausted, len(s.slots), slices.Compact(waiting), len(s.slots))
}

// begin starts a transaction on sl, creating its producer if needed.
func (s *Sink) begin(sl *txnSlot) error {
	for attempt := 0; ; attempt++ {
		if sl.cl == nil {
			opts := slices.Concat(s.base, []kgo.Opt{
				kgo.TransactionalID(sl.id), kgo.TransactionTimeout(s.cfg.TransactionTimeout), kgo.DefaultProduceTopic(s.cfg.Topic),
			})
			if s.cfg.MaxBufferedRecords > 0 {
				opts = append(opts, kgo.MaxBufferedRecords(s.cfg.MaxBufferedRecords))
			}
			cl, err := kgo.NewClient(slices.Concat(opts, s.cfg.ClientOptions)...)
			if err != nil {
				return fmt.Errorf("kafka sink %q: producer of %q: %w", s.op, sl.id, err)
			}
			sl.cl = cl
		}
		err := sl.cl.BeginTransaction()
		if err == nil {
			break
		}
		// A producer in a fatal state: start over with a new one once.
		sl.cl.Close()
		sl.cl = nil
		if attempt > 0 {
			return fmt.Errorf("kafka sink %q: begin a transaction on %q: %w", s.op, sl.id, err)
		}
	}
	sl.state = slotOpen
	sl.acked.Store(0)
	s.mu.Lock()
	sl.err = nil
	s.mu.Unlock()
	return nil
}

// loseOpen aborts the open transaction after one of its records failed
// (the brokers aborted or fenced it, or a record could not be written):
// the records in it are not in Kafka and must be written again, which
// only a restore from the last checkpoint does.
func (s *Sink) loseOpen(cause error) error {
	sl := s.open
	s.open = nil
	sl.state = slotFree
	if sl.cl != nil {
		sl.cl.Close() // the next use re-initialises the id, which aborts the transaction
		sl.cl = nil
	}
	return fmt.Errorf("kafka sink %q: %w: transactional id %q: %w; the records since the last checkpoint must be written again: restore the instance from it", s.op, ErrTransactionLost, sl.id, cause)
}

// preCommitTxn implements PreCommit under exactly-once: it flushes the
// open transaction and records it in state as pending for checkpoint;
// the next record begins a new transaction.
func (s *Sink) preCommitTxn(ctx sdk.Context, checkpoint uint64) error {
	for _, sl := range s.slots {
		if sl.state == slotCommitted && sl.release == 0 {
			sl.release = checkpoint
		}
	}
	sl := s.open
	if sl == nil {
		return nil // nothing written since the last barrier
	}
	fctx, cancel := context.WithTimeout(ctx, s.cfg.FlushTimeout)
	defer cancel()
	if err := sl.cl.Flush(fctx); err != nil {
		// The transaction stays open: the next PreCommit takes its records.
		return s.unavailable(fmt.Errorf("checkpoint %d: %d records not acknowledged within %v", checkpoint, sl.cl.BufferedProduceRecords(), s.cfg.FlushTimeout))
	}
	s.mu.Lock()
	failed, rejected := sl.err, len(s.rejected)
	s.mu.Unlock()
	if failed != nil {
		return s.loseOpen(failed)
	}
	if rejected > 0 {
		// Fail this checkpoint, so that the next one holds their dead
		// letters as well as the transaction.
		return fmt.Errorf("kafka sink %q: checkpoint %d: %w: %d records; they go to the dead-letter stream with the next record, and the next checkpoint takes the transaction", s.op, checkpoint, ErrRejected, rejected)
	}
	if sl.acked.Load() == 0 {
		return nil // nothing reached the brokers: the transaction takes what follows
	}
	pid, epoch, err := sl.cl.ProducerID(fctx)
	if err != nil {
		return s.loseOpen(fmt.Errorf("producer id: %w", err))
	}
	sl.entry = txnEntry{checkpoint: checkpoint, producerID: pid, epoch: epoch, group: s.group}
	ctx.State().Set([]byte(txnPrefix+sl.id), sl.entry.encode())
	sl.state = slotPending
	s.open = nil
	return nil
}

// commitTxns implements Commit under exactly-once: it commits every
// pending transaction prepared for checkpoint or before, the instance's
// own and those of other key groups' state it holds (after a rescale),
// and frees the ids whose commit a completed checkpoint confirms.
func (s *Sink) commitTxns(ctx sdk.Context, checkpoint uint64) error {
	cctx, cancel := context.WithTimeout(ctx, s.cfg.CommitTimeout)
	defer cancel()
	st := ctx.State()
	var errs []error
	var due []*txnSlot
	for _, sl := range s.slots {
		if sl.state == slotPending && sl.entry.checkpoint <= checkpoint {
			due = append(due, sl)
		}
	}
	slices.SortFunc(due, func(a, b *txnSlot) int { return cmp.Compare(a.entry.checkpoint, b.entry.checkpoint) })
	for _, sl := range due {
		if err := s.commitSlot(cctx, st, sl); err != nil {
			errs = append(errs, err)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(s.adopted)) {
		if e := s.adopted[id]; e.checkpoint <= checkpoint {
			if err := s.commitAdopted(cctx, st, id, e); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, sl := range s.slots {
		if sl.state == slotCommitted && sl.release != 0 && sl.release <= checkpoint {
			sl.state = slotFree
		}
	}
	return errors.Join(errs...)
}

// commitSlot commits the pending transaction of sl: through its producer
// when it has one, else (after a restore, or when that fails) by EndTxn
// with the producer id and epoch in state.
func (s *Sink) commitSlot(ctx context.Context, st sdk.State, sl *txnSlot) error {
	if sl.cl != nil {
		err := sl.cl.EndTransaction(ctx, kgo.TryCommit)
		if err == nil {
			s.committed(st, sl)
			return nil
		}
		s.log.Warn("kafka sink: commit through the producer failed; committing by producer id and epoch", "transactional_id", sl.id, "error", err)
		sl.cl.Close()
		sl.cl = nil
	}
	err := s.coord.endTxn(ctx, sl.id, sl.entry.producerID, sl.entry.epoch, true)
	switch {
	case err == nil:
		s.committed(st, sl)
		return nil
	case errors.Is(err, ErrTransactionLost):
		s.committed(st, sl) // nothing more can be done with it
		s.lost(ctx, sl.id, sl.entry, err)
		return nil
	}
	return s.health.failure(fmt.Sprintf("kafka sink %q: commit checkpoint %d's transaction %q (retried at the next completion)", s.op, sl.entry.checkpoint, sl.id), err)
}

// committed records that sl's transaction is committed.
func (s *Sink) committed(st sdk.State, sl *txnSlot) {
	st.Delete([]byte(txnPrefix + sl.id))
	s.commits++
	sl.state, sl.release, sl.seq = slotCommitted, 0, s.commits
}

// commitAdopted commits a pending transaction of another pool found in
// state: of another key group's state after a rescale, or of a pool
// this instance no longer uses (another prefix, a smaller pool). Its
// producer never runs here, so it goes by EndTxn.
func (s *Sink) commitAdopted(ctx context.Context, st sdk.State, id string, e txnEntry) error {
	err := s.coord.endTxn(ctx, id, e.producerID, e.epoch, true)
	if err != nil && !errors.Is(err, ErrTransactionLost) {
		return s.health.failure(fmt.Sprintf("kafka sink %q: commit checkpoint %d's transaction %q (retried at the next completion)", s.op, e.checkpoint, id), err)
	}
	delete(s.adopted, id)
	if e.group == s.group {
		st.Delete([]byte(txnPrefix + id))
	} else {
		// That key group's state cannot be written from here: remember
		// that the entry is done, for whoever restores this state.
		st.Set([]byte(txnDonePrefix+id), e.encode())
	}
	if err != nil {
		s.lost(ctx, id, e, err)
	}
	return nil
}

// lost reports a transaction that cannot be committed any more, after
// fencing its id (which aborts whatever the id holds now: written after
// the restored checkpoint). Its entry is forgotten, not kept for another
// try: the commit cannot succeed later, and an entry kept in state would
// come back with every restore and hold its pool slot for ever (the
// pipeline stalled so). The usual cause is harmless: a rollback restored
// a checkpoint whose transaction this sink had already committed before
// the crash, and the id has served a newer transaction since.
func (s *Sink) lost(ctx context.Context, id string, e txnEntry, err error) {
	if ferr := s.coord.fence(ctx, id, s.cfg.TransactionTimeout); ferr != nil {
		s.log.Warn("kafka sink: fencing a transactional id after a lost transaction failed", "transactional_id", id, "error", ferr)
	}
	s.log.Error("kafka sink: a transaction prepared for a checkpoint cannot be committed any more: either it was committed before a rollback and its id reused since (its records are in the topic), or it was aborted (it outlived TransactionTimeout, or another producer used the id) and its records are not",
		"transactional_id", id, "checkpoint", e.checkpoint, "producer_id", e.producerID, "epoch", e.epoch, "error", err)
}

// closeExactlyOnce aborts the open transaction (its records come again
// after a restore) and closes the producers, leaving pending
// transactions to Commit after a restore.
func (s *Sink) closeExactlyOnce() {
	if sl := s.open; sl != nil && sl.cl != nil {
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.CloseTimeout)
		if err := sl.cl.AbortBufferedRecords(ctx); err == nil {
			err = sl.cl.EndTransaction(ctx, kgo.TryAbort)
			if err != nil {
				s.log.Warn("kafka sink: aborting the open transaction at close failed; the next Init fences it", "transactional_id", sl.id, "error", err)
			}
		}
		cancel()
	}
	s.open = nil
	for _, sl := range s.slots {
		if sl.cl != nil {
			sl.cl.Close()
			sl.cl = nil
		}
	}
	if s.adm != nil {
		s.adm.Close()
		s.adm = nil
	}
}
