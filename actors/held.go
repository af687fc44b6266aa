package actors

import (
	"encoding/json"
	"fmt"

	"github.com/sluicehq/sluice/internal/core"
)

// heldKey is the node-metadata key of the key groups this node held when it
// last stopped cleanly. A node that crashed has no such record: the groups
// it held have since been taken over, and what its database still has for
// them is stale, so it starts holding nothing.
const heldKey = "held-groups"

// loadHeld reads (and deletes) the record of a clean stop.
func (n *Node) loadHeld() map[string][]bool {
	v, ok, err := n.db.GetMeta(heldKey)
	if err != nil || !ok {
		return nil
	}
	var runs map[string][][2]int
	if err := json.Unmarshal(v, &runs); err != nil {
		n.log.Warn("ignoring an unreadable record of held key groups", "error", err)
		return nil
	}
	_ = n.db.SetMeta(heldKey, []byte("{}"))
	held := make(map[string][]bool)
	for op, rs := range runs {
		g := make([]bool, maxKeyGroups)
		for _, r := range rs {
			for i := r[0]; i < r[1] && i < len(g); i++ {
				g[i] = true
			}
		}
		held[op] = g
	}
	return held
}

// saveHeld records the key groups held at a clean stop.
func (n *Node) saveHeld() error {
	runs := make(map[string][][2]int)
	for op, g := range n.coordImpl.Held() {
		var rs [][2]int
		for i := 0; i < len(g); i++ {
			if !g[i] {
				continue
			}
			if len(rs) > 0 && rs[len(rs)-1][1] == i {
				rs[len(rs)-1][1] = i + 1
			} else {
				rs = append(rs, [2]int{i, i + 1})
			}
		}
		if len(rs) > 0 {
			runs[op] = rs
		}
	}
	b, err := json.Marshal(runs)
	if err != nil {
		return err
	}
	if err := n.db.SetMeta(heldKey, b); err != nil {
		return fmt.Errorf("actors: record held key groups: %w", err)
	}
	return nil
}

// maxKeyGroups sizes the per-operator key-group flags.
const maxKeyGroups = core.MaxKeyGroups
