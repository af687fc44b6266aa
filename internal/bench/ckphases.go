package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/sluicehq/sluice/checkpoint"
	"github.com/sluicehq/sluice/objstore/fsstore"
)

// CheckpointPhases is where one checkpoint's time went, each measured
// from its trigger and including the phases before: the node phases of
// its slowest node (checkpoint.Phases, from the trigger reaching that
// node: the same clock when embedded), every part acknowledged at the
// coordinator, and the metadata written (the metadata object's
// modification time in a directory store, whose clock may lag by a
// kernel tick, a few milliseconds).
type CheckpointPhases struct {
	Injected, Snapshotted, Copied, Uploaded, Acked, Stored time.Duration
}

// checkpointRecords returns how long each complete checkpoint in the
// directory store took and, for those that recorded them, its phases.
func checkpointRecords(dir string) ([]time.Duration, []CheckpointPhases, error) {
	obj, err := fsstore.Open(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("bench: open the checkpoint store: %w", err)
	}
	metas, err := checkpoint.NewStore(obj).List(context.Background())
	if err != nil {
		return nil, nil, fmt.Errorf("bench: list checkpoints: %w", err)
	}
	durs := make([]time.Duration, len(metas))
	var phases []CheckpointPhases
	for i, m := range metas {
		durs[i] = m.Duration()
		var p CheckpointPhases
		recorded := false
		for _, n := range m.Nodes {
			if n.Phases == nil {
				continue
			}
			recorded = true
			p.Injected = max(p.Injected, n.Phases.Injected)
			p.Snapshotted = max(p.Snapshotted, n.Phases.Snapshotted)
			p.Copied = max(p.Copied, n.Phases.Copied)
			p.Uploaded = max(p.Uploaded, n.Phases.Uploaded)
		}
		if !recorded {
			continue
		}
		p.Acked = m.Duration()
		fi, err := os.Stat(filepath.Join(dir, "chk", fmt.Sprintf("%020d", m.ID), "meta.json"))
		if err != nil {
			return nil, nil, fmt.Errorf("bench: checkpoint %d's metadata: %w", m.ID, err)
		}
		p.Stored = fi.ModTime().Sub(m.Started)
		phases = append(phases, p)
	}
	return durs, phases, nil
}

// phasesNote describes the median of each phase over checkpoints, or ""
// when none recorded them.
func phasesNote(ps []CheckpointPhases) string {
	if len(ps) == 0 {
		return ""
	}
	med := func(f func(CheckpointPhases) time.Duration) string {
		xs := make([]time.Duration, len(ps))
		for i, p := range ps {
			xs[i] = f(p)
		}
		slices.Sort(xs)
		return fmt.Sprint(xs[(len(xs)-1)/2].Round(time.Millisecond)) // as Result.Percentile(50)
	}
	return fmt.Sprintf("medians over %d checkpoints, from the trigger: sources injected %s, every instance snapshotted %s, database copied %s, "+
		"uploaded %s, acknowledged at the coordinator %s, metadata written %s", len(ps),
		med(func(p CheckpointPhases) time.Duration { return p.Injected }), med(func(p CheckpointPhases) time.Duration { return p.Snapshotted }),
		med(func(p CheckpointPhases) time.Duration { return p.Copied }), med(func(p CheckpointPhases) time.Duration { return p.Uploaded }),
		med(func(p CheckpointPhases) time.Duration { return p.Acked }), med(func(p CheckpointPhases) time.Duration { return p.Stored }))
}
