package actors

import (
	"errors"
	"fmt"

	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/persistence"
)

// StateLog mirrors operator state to an external log: see core.StateLog.
type StateLog = core.StateLog

// appendLog sends the writes waiting for the state log. It reports whether
// nothing is left waiting.
func (i *instance) appendLog() bool {
	sl := i.node.cfg.StateLog
	if sl == nil || len(i.logBacklog) == 0 {
		return true
	}
	kvs := make([]core.KV, len(i.logBacklog))
	for j, kv := range i.logBacklog {
		kvs[j] = core.KV{KeyGroup: persistence.KeyGroupOf(i.key.op, kv.Key), Key: kv.Key, Value: kv.Value}
	}
	if err := sl.Append(i.ctx, i.key.op, i.spec.Meta.KeyGroups, kvs); err != nil {
		i.log.Warn("state log append failed; will retry", "writes", len(i.logBacklog), "error", err)
		if errors.Is(err, core.ErrTransient) {
			i.pub.transient.Add(1)
		}
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
	err := sl.Restore(i.ctx, i.key.op, i.spec.Meta.KeyGroups, i.lo, i.hi, func(kv core.KV) error {
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
