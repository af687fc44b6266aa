package actors

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice/persistence"
)

// StateLog mirrors operator state to a durable external log, so that state
// survives the crash of the node that held it (connectors/kafka implements
// it with one compacted topic per operator, a partition per key group).
//
// Each commit of an instance's state appends the committed writes; when an
// instance becomes active and no node handed its state over (its previous
// node crashed), it is restored from the log first. Appends that fail are
// kept and retried at the next commit; until they succeed the instance's
// durability snapshots wait (at-least-once delivery stays correct).
type StateLog interface {
	// Append durably logs committed writes of operator op (a nil Value is a
	// deletion), blocking until the log has acknowledged them.
	Append(ctx context.Context, op string, keyGroups int, kvs []persistence.KV) error
	// Restore calls fn, in log order, with every logged write of operator
	// op in key groups [first, end).
	Restore(ctx context.Context, op string, keyGroups, first, end int, fn func(persistence.KV) error) error
}

// appendLog sends the writes waiting for the state log. It reports whether
// nothing is left waiting.
func (i *instance) appendLog() bool {
	sl := i.node.cfg.StateLog
	if sl == nil || len(i.logBacklog) == 0 {
		return true
	}
	if err := sl.Append(i.ctx, i.key.op, i.spec.Meta.KeyGroups, i.logBacklog); err != nil {
		i.log.Warn("state log append failed; will retry", "writes", len(i.logBacklog), "error", err)
		i.setLastError("state log: " + err.Error())
		return false
	}
	clear(i.logBacklog)
	i.logBacklog = i.logBacklog[:0]
	return true
}

// restoreFromLog replaces the instance's key groups with what the state log
// holds for them (the last logged value of each key).
func (i *instance) restoreFromLog() error {
	sl := i.node.cfg.StateLog
	if sl == nil {
		return nil
	}
	latest := make(map[string][]byte)
	n := 0
	err := sl.Restore(i.ctx, i.key.op, i.spec.Meta.KeyGroups, i.lo, i.hi, func(kv persistence.KV) error {
		n++
		latest[string(kv.Key)] = kv.Value // nil: deleted
		return nil
	})
	if err != nil {
		return fmt.Errorf("restore %s from the state log: %w", i.key, err)
	}
	kvs := make([]persistence.KV, 0, len(latest))
	for k, v := range latest {
		if v != nil {
			kvs = append(kvs, persistence.KV{Key: []byte(k), Value: v})
		}
	}
	if err := i.node.db.ImportGroups(i.key.op, i.lo, i.hi, true, kvs); err != nil {
		return fmt.Errorf("restore %s from the state log: %w", i.key, err)
	}
	i.store.DropCache()
	i.log.Info("state restored from the state log", "writes", n, "keys", len(kvs))
	return nil
}
