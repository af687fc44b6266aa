package checkpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/objstore"
)

// Branch records that the cluster was started from checkpoint From (a
// savepoint, say) while newer checkpoints, up to Newest, existed: those
// belong to the run the restore abandoned, and Latest skips them, so that a
// node that starts or rolls back later resumes from From or from what the
// cluster completed since.
type Branch struct {
	From   uint64    `json:"from"`
	Newest uint64    `json:"newest"`
	At     time.Time `json:"at"`
}

// Abandons reports whether checkpoint id belongs to the abandoned run.
func (b Branch) Abandons(id uint64) bool { return id > b.From && id <= b.Newest }

// branchKey is the object holding the newest Branch.
const branchKey = "branch.json"

// Branch returns the recorded Branch (the zero one, which abandons
// nothing, when none was).
func (s *Store) Branch(ctx context.Context) (Branch, error) {
	r, err := s.obj.Get(ctx, branchKey)
	if errors.Is(err, objstore.ErrNotFound) {
		return Branch{}, nil
	}
	if err != nil {
		return Branch{}, fmt.Errorf("checkpoint: read the restore branch: %w", err)
	}
	defer r.Close()
	var b Branch
	if err := json.NewDecoder(r).Decode(&b); err != nil {
		return Branch{}, fmt.Errorf("checkpoint: decode the restore branch: %w", err)
	}
	return b, nil
}

// StartFrom makes checkpoint id what the cluster restores from, rather
// than the newest: it records a Branch abandoning every newer checkpoint,
// unless the recorded one already starts from id (a node of the cluster
// started from it already: the cluster's first restore only is from id,
// later ones from what it completed since). It returns what to restore
// now: Restorable once the branch is recorded.
func (s *Store) StartFrom(ctx context.Context, id uint64) (Meta, error) {
	if _, err := s.Get(ctx, id); err != nil {
		return Meta{}, err
	}
	b, err := s.Branch(ctx)
	if err != nil {
		return Meta{}, err
	}
	if b.From == id {
		return s.Restorable(ctx)
	}
	ids, err := s.ids(ctx)
	if err != nil {
		return Meta{}, err
	}
	b = Branch{From: id, Newest: id, At: time.Now()}
	if len(ids) > 0 {
		b.Newest = max(id, ids[len(ids)-1])
	}
	data, err := json.Marshal(b)
	if err != nil {
		return Meta{}, fmt.Errorf("checkpoint: encode the restore branch: %w", err)
	}
	if err := s.obj.Put(ctx, branchKey, bytes.NewReader(data), int64(len(data))); err != nil {
		return Meta{}, fmt.Errorf("checkpoint: record the restore from %d: %w", id, err)
	}
	return s.Restorable(ctx)
}
