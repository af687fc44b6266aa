package connect

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/sdk"
)

// Txn is a transaction a two-phase-commit sink prepared for a checkpoint.
type Txn struct {
	// Writer names the sink instance that wrote it (WriterName: the
	// operator and the instance's first key group, which a rescale keeps
	// apart from the other instances').
	Writer string
	// Checkpoint is the checkpoint whose barrier closed it.
	Checkpoint uint64
	// Handle is what Transactions.PreCommit returned for it: whatever
	// Commit and Abort need (a file name, a transactional id).
	Handle []byte
}

// Transactions is what a two-phase-commit sink's author writes (as for
// Flink's TwoPhaseCommitSinkFunction); TwoPhase calls it on the instance's
// goroutine.
type Transactions interface {
	// Begin starts a transaction; TwoPhase calls it before the first
	// Write after Init or a barrier.
	Begin(ctx sdk.Context) error
	// Write adds rec to the open transaction. An error fails the attempt
	// (the record is retried by a fresh operator after Init, which
	// discards the open transaction: see Recoverer).
	Write(ctx sdk.Context, rec sdk.Record) error
	// PreCommit makes the open transaction durable but not visible and
	// returns its handle, which State keeps as part of checkpoint. An
	// error fails the checkpoint; the transaction stays open, and the
	// next PreCommit takes it.
	PreCommit(ctx sdk.Context, checkpoint uint64) (handle []byte, err error)
	// Commit makes txn visible. It must be idempotent: after a restore
	// the same txn is committed again, and one committed (and maybe
	// consumed) before must succeed.
	Commit(ctx sdk.Context, txn Txn) error
	// Abort discards a prepared txn that no checkpoint State holds lists
	// (see Recoverer); one already gone is no error.
	Abort(ctx sdk.Context, txn Txn) error
}

// Recoverer is implemented by Transactions that can list what earlier
// incarnations left behind. Recover discards writer's transaction that
// was open (not prepared: its records come again) and returns writer's
// prepared transactions. scope is what the writer recorded
// (TwoPhase.Init's scope: where it wrote, such as a path).
type Recoverer interface {
	Recover(ctx sdk.Context, writer string, scope []byte) ([]Txn, error)
}

// WriterName names the writer of the instance of operator op whose first
// key group is group: "<op>-<group, 5 digits>".
func WriterName(op string, group int) string { return fmt.Sprintf("%s-%05d", op, group) }

// TwoPhase is the exactly-once part of a two-phase-commit sink: it calls
// a Transactions at the right points and keeps the prepared transactions
// in State. Embed it in a sink operator and call its methods from the
// operator's (NewSink's Sink does). Its methods run on the instance's
// goroutine.
//
// State, in the instance's first key group, under the prefix given to
// Init:
//
//	<prefix>txn/<writer>/<checkpoint, 20 digits> → uvarint(len scope) scope handle
//	<prefix>writer/<writer>                      → scope
//
// Init reads every key group the instance owns, so after a rescale an
// instance commits its predecessors' transactions and recovers their
// writers too. A prepared transaction State does not list (an orphan) was
// prepared after the checkpoint State was restored from, but it may
// belong to a checkpoint that completed without this node hearing of it
// (its coordinator stopped or crashed while storing it): a rollback to
// that checkpoint commits it. So orphans are aborted only once a newer
// checkpoint completes (Commit), when no rollback can go back to theirs.
type TwoPhase struct {
	txns   Transactions
	prefix string
	writer string
	scope  []byte
	log    *slog.Logger
	open   bool

	pending map[txnKey]Txn // prepared transactions State lists (of any writer)
	orphans map[txnKey]Txn // prepared transactions State does not list
}

// txnKey identifies a prepared transaction.
type txnKey struct {
	writer     string
	checkpoint uint64
}

func (t *TwoPhase) stateKey(k txnKey) []byte {
	return fmt.Appendf(nil, "%stxn/%s/%020d", t.prefix, k.writer, k.checkpoint)
}

// Init reads the prepared transactions State lists, then, if txns is a
// Recoverer, recovers every writer State knows of (this instance's, and
// after a rescale its predecessors'): their open transactions are
// discarded, and their prepared ones State does not list kept as orphans.
// It records this instance's writer with scope.
func (t *TwoPhase) Init(ctx sdk.Context, txns Transactions, prefix string, scope []byte) error {
	t.start(ctx, txns, prefix, scope)
	writers := map[string][]byte{t.writer: scope}
	st := ctx.State()
	err := sdk.ScanAllGroups(st, []byte(prefix), func(key, value []byte) error {
		k := string(key[len(prefix):])
		switch {
		case strings.HasPrefix(k, "txn/"):
			w, ckpt, ok := strings.Cut(k[len("txn/"):], "/")
			n, err := strconv.ParseUint(ckpt, 10, 64)
			l, m := binary.Uvarint(value)
			if !ok || err != nil || m <= 0 || uint64(len(value)-m) < l {
				return fmt.Errorf("transaction %q: %w", k, ErrCorrupt)
			}
			sc := value[m : m+int(l)]
			t.pending[txnKey{w, n}] = Txn{Writer: w, Checkpoint: n, Handle: slices.Clone(value[m+int(l):])}
			if _, ok := writers[w]; !ok {
				writers[w] = slices.Clone(sc)
			}
		case strings.HasPrefix(k, "writer/"):
			if w := k[len("writer/"):]; w != t.writer {
				writers[w] = slices.Clone(value)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read transactions from state: %w", err)
	}
	if r, ok := txns.(Recoverer); ok {
		for _, w := range slices.Sorted(maps.Keys(writers)) {
			prepared, err := r.Recover(ctx, w, writers[w])
			if err != nil {
				return fmt.Errorf("recover writer %s: %w", w, err)
			}
			for _, txn := range prepared {
				if k := (txnKey{txn.Writer, txn.Checkpoint}); !t.known(k) {
					t.orphans[k] = txn
				}
			}
		}
		if len(t.orphans) > 0 {
			t.log.Info("two-phase sink: prepared transactions the restored checkpoint does not list; aborted once a newer checkpoint completes",
				"transactions", len(t.orphans))
		}
	}
	st.Set([]byte(prefix+"writer/"+t.writer), scope)
	return nil
}

// start resets t to write with txns, knowing no transaction.
func (t *TwoPhase) start(ctx sdk.Context, txns Transactions, prefix string, scope []byte) {
	info := ctx.Instance()
	*t = TwoPhase{txns: txns, prefix: prefix, writer: WriterName(info.Operator, info.FirstGroup), scope: scope,
		log: ctx.Logger(), pending: map[txnKey]Txn{}, orphans: map[txnKey]Txn{}}
}

// Writer returns this instance's writer name.
func (t *TwoPhase) Writer() string { return t.writer }

// Write writes rec to the open transaction, beginning one first if none
// is open.
func (t *TwoPhase) Write(ctx sdk.Context, rec sdk.Record) error {
	if !t.open {
		if err := t.txns.Begin(ctx); err != nil {
			return fmt.Errorf("begin a transaction: %w", err)
		}
		t.open = true
	}
	return t.txns.Write(ctx, rec)
}

// PreCommit prepares the open transaction for checkpoint and lists it in
// State (nothing if no transaction is open: nothing was written since the
// last barrier).
func (t *TwoPhase) PreCommit(ctx sdk.Context, checkpoint uint64) error {
	if !t.open {
		return nil
	}
	handle, err := t.txns.PreCommit(ctx, checkpoint)
	if err != nil {
		return err
	}
	t.open = false
	k := txnKey{t.writer, checkpoint}
	v := append(binary.AppendUvarint(nil, uint64(len(t.scope))), t.scope...)
	ctx.State().Set(t.stateKey(k), append(v, handle...))
	t.pending[k] = Txn{Writer: t.writer, Checkpoint: checkpoint, Handle: handle}
	delete(t.orphans, k) // prepared again under the same name
	return nil
}

// Commit commits every listed transaction of checkpoint or an earlier one,
// in order of checkpoint then writer, and only then forgets them (State
// keeps a transaction until its Commit succeeded). Once all succeeded it
// aborts the orphans of checkpoints before checkpoint. Failures are
// returned together; the next Commit tries again.
func (t *TwoPhase) Commit(ctx sdk.Context, checkpoint uint64) error {
	var due []txnKey
	for k := range t.pending {
		if k.checkpoint <= checkpoint {
			due = append(due, k)
		}
	}
	slices.SortFunc(due, compareKeys)
	var errs []error
	for _, k := range due {
		if err := t.txns.Commit(ctx, t.pending[k]); err != nil {
			errs = append(errs, fmt.Errorf("commit the transaction of %s for checkpoint %d: %w", k.writer, k.checkpoint, err))
			continue
		}
		if k.writer == t.writer {
			ctx.State().Delete(t.stateKey(k))
		}
		// Another writer's entry is in another key group's state, which
		// cannot be changed from here; committing it again is harmless.
		delete(t.pending, k)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return t.abortOrphans(ctx, checkpoint)
}

// abortOrphans aborts the orphans of checkpoints before checkpoint, which
// completed: no rollback goes back past it.
func (t *TwoPhase) abortOrphans(ctx sdk.Context, checkpoint uint64) error {
	var due []txnKey
	for k := range t.orphans {
		if k.checkpoint < checkpoint {
			due = append(due, k)
		}
	}
	slices.SortFunc(due, compareKeys)
	for _, k := range due {
		if err := t.txns.Abort(ctx, t.orphans[k]); err != nil {
			return fmt.Errorf("abort the transaction of %s for checkpoint %d that no checkpoint lists: %w", k.writer, k.checkpoint, err)
		}
		delete(t.orphans, k)
		t.log.Info("two-phase sink: aborted a transaction prepared after the checkpoint it was restored from", "writer", k.writer, "checkpoint", k.checkpoint)
	}
	return nil
}

// Open reports whether a transaction is open (written since the last
// barrier).
func (t *TwoPhase) Open() bool { return t.open }

// known reports whether State lists transaction k.
func (t *TwoPhase) known(k txnKey) bool {
	_, ok := t.pending[k]
	return ok
}

func compareKeys(a, b txnKey) int {
	return cmp.Or(cmp.Compare(a.checkpoint, b.checkpoint), strings.Compare(a.writer, b.writer))
}
