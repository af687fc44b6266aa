package ckpt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/sluicehq/sluice/checkpoint"
	"github.com/sluicehq/sluice/persistence"
)

// Fetcher fetches one node's part of a checkpoint into dir (cache is a
// directory of files kept between fetches). *checkpoint.Store implements
// it. Fetch blocks until the part is in dir or ctx is done; the caller
// retries.
type Fetcher interface {
	Fetch(ctx context.Context, m checkpoint.Meta, node, dir, cache string) error
}

var _ Fetcher = (*checkpoint.Store)(nil)

// Restorer opens the parts of checkpoints that instances restore key
// groups from, sharing the fetched and opened copies between the instances
// of one rollback. It is safe for concurrent use; its mutex is a leaf: no
// fetch or open (I/O) runs while it is held, a second Open of a part being
// loaded waits for the first without it.
type Restorer struct {
	dataDir string        // the node's data directory
	nodeID  string        // this node: its own parts are local copies
	store   Fetcher       // nil: the node keeps no checkpoints
	timeout time.Duration // bounds one fetch

	mu            sync.Mutex
	snaps         map[string]*load // by directory
	users         int              // restores in progress
	closeWhenIdle bool             // CloseAll was asked while some were
}

// load is one part being opened or opened: done is closed once snap or err
// is set (by the Open that started it, never changed after).
type load struct {
	done chan struct{}
	snap *persistence.Snapshot
	err  error
}

// NewRestorer returns the restorer of node nodeID whose data directory is
// dataDir, fetching the parts other nodes took from store, each fetch
// bounded by timeout. store may be nil when the node keeps no checkpoints
// (it then never restores from one).
func NewRestorer(dataDir, nodeID string, store Fetcher, timeout time.Duration) *Restorer {
	return &Restorer{dataDir: dataDir, nodeID: nodeID, store: store, timeout: timeout}
}

// Open returns node's part of checkpoint meta opened, from the local copy
// when this node took it, else fetched from the store. It blocks for the
// fetch and open, or until another Open of the same part has done them
// (when that one failed, it tries again itself).
// The snapshot stays open, owned by the Restorer, until CloseAll; call it
// between Begin and End.
func (r *Restorer) Open(meta *checkpoint.Meta, node string) (*persistence.Snapshot, error) {
	dir := filepath.Join(persistence.CheckpointDir(r.dataDir), strconv.FormatUint(meta.ID, 10))
	if node != r.nodeID {
		dir = filepath.Join(persistence.CheckpointDir(r.dataDir), "fetched", strconv.FormatUint(meta.ID, 10)+"-"+node)
	}
	r.mu.Lock()
	for l := r.snaps[dir]; l != nil; l = r.snaps[dir] {
		r.mu.Unlock()
		<-l.done
		if l.err == nil {
			return l.snap, nil
		}
		r.mu.Lock() // it failed: try again, as the first did
	}
	l := &load{done: make(chan struct{})}
	if r.snaps == nil {
		r.snaps = make(map[string]*load)
	}
	r.snaps[dir] = l
	r.mu.Unlock()

	l.snap, l.err = r.load(meta, node, dir)
	if l.err != nil {
		r.mu.Lock()
		delete(r.snaps, dir) // the next Open tries again
		r.mu.Unlock()
	}
	close(l.done)
	return l.snap, l.err
}

// load fetches node's part of meta into dir unless it is there, and opens
// it.
func (r *Restorer) load(meta *checkpoint.Meta, node, dir string) (*persistence.Snapshot, error) {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if r.store == nil {
			return nil, fmt.Errorf("ckpt: fetch checkpoint %d part of %s: no checkpoint store", meta.ID, node)
		}
		ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
		defer cancel()
		tmp := dir + ".part"
		_ = os.RemoveAll(tmp)
		cache := filepath.Join(persistence.CheckpointDir(r.dataDir), "cache")
		if err := r.store.Fetch(ctx, *meta, node, tmp, cache); err != nil {
			return nil, err
		}
		if err := os.Rename(tmp, dir); err != nil {
			return nil, err
		}
	}
	return persistence.OpenCheckpoint(dir)
}

// Begin and End bracket a restore: the copies it uses stay open until it
// ends (an instance activated outside a rollback may restore while one
// finishes).
func (r *Restorer) Begin() {
	r.mu.Lock()
	r.users++
	r.mu.Unlock()
}

// End ends a restore begun by Begin, closing the copies if CloseAll was
// asked meanwhile and this was the last.
func (r *Restorer) End() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.users--; r.users == 0 && r.closeWhenIdle {
		r.closeLocked()
	}
}

// CloseAll closes the opened copies and deletes the fetched ones, once no
// restore uses them.
func (r *Restorer) CloseAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.users > 0 {
		r.closeWhenIdle = true
		return
	}
	r.closeLocked()
}

// closeLocked closes the copies and deletes the fetched ones; r.mu is held
// (local files only, and no restore is in progress, so no load is under
// way: a restore that begins meanwhile waits, and does not fetch into a
// directory being deleted).
func (r *Restorer) closeLocked() {
	r.closeWhenIdle = false
	for dir, l := range r.snaps {
		if l.snap != nil {
			_ = l.snap.Close()
		}
		delete(r.snaps, dir)
	}
	_ = os.RemoveAll(filepath.Join(persistence.CheckpointDir(r.dataDir), "fetched"))
}
