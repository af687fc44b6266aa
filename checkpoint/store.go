package checkpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/objstore"
	"github.com/sluicehq/sluice/persistence"
)

// Store keeps checkpoints in an object store (see the package comment for
// the layout). It is safe for concurrent use.
type Store struct {
	obj objstore.Store
}

// NewStore returns a Store over obj.
func NewStore(obj objstore.Store) *Store { return &Store{obj: obj} }

// Objects returns the underlying object store.
func (s *Store) Objects() objstore.Store { return s.obj }

func idKey(id uint64) string { return fmt.Sprintf("%020d", id) }

func metaKey(id uint64) string { return "chk/" + idKey(id) + "/meta.json" }

func nodeKey(id uint64, node, file string) string {
	return "chk/" + idKey(id) + "/nodes/" + node + "/" + file
}

func sharedKey(db, file string) string { return "sst/" + db + "/" + file }

// uploadConcurrency is how many files of a part are uploaded at once: a
// store's latency (a request to S3, the fsyncs of a directory store) is
// paid per file, and a part has several (a new table file, the MANIFEST,
// OPTIONS, the log).
const uploadConcurrency = 8

// UploadPart uploads node's part of checkpoint id from the checkpoint
// directory dir: every shared file that base (the newest complete
// checkpoint, if any) does not reference for database db, and every other
// file, uploadConcurrency at a time. Files base references are in the
// store (Retain never deletes the newest checkpoint's). It returns the
// part with Uploaded set; Groups are the caller's to fill. It writes no
// metadata: the coordinator completes the checkpoint with Complete once
// every node has uploaded.
func (s *Store) UploadPart(ctx context.Context, id uint64, node, db, dir string, files []persistence.CheckpointFile, base *Meta) (NodePart, error) {
	part := NodePart{Node: node, DB: db}
	stored := map[string]bool{}
	if base != nil {
		for _, p := range base.Nodes {
			if p.DB != db {
				continue
			}
			for _, f := range p.Files {
				if f.Shared {
					stored[f.Name] = true
				}
			}
		}
	}
	type upload struct {
		f   persistence.CheckpointFile
		key string
	}
	var todo []upload
	for _, f := range files {
		part.Files = append(part.Files, File{Name: f.Name, Size: f.Size, Shared: f.Shared})
		key := nodeKey(id, node, f.Name)
		if f.Shared {
			if stored[f.Name] {
				continue
			}
			key = sharedKey(db, f.Name)
		}
		todo = append(todo, upload{f, key})
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(todo))
	sem := make(chan struct{}, uploadConcurrency)
	var wg sync.WaitGroup
	for i, u := range todo {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if errs[i] = s.putFile(ctx, u.key, filepath.Join(dir, u.f.Name), u.f.Size, u.f.Shared); errs[i] != nil {
				cancel() // the part fails: stop the others
			}
		}()
	}
	wg.Wait()
	// The cause, rather than another upload's cancellation by it.
	var failed error
	for i, u := range todo {
		err := errs[i]
		switch {
		case err == nil:
			part.Uploaded += u.f.Size
		case failed == nil || errors.Is(failed, context.Canceled) && !errors.Is(err, context.Canceled):
			failed = fmt.Errorf("checkpoint %d: upload %s: %w", id, u.f.Name, err)
		}
	}
	if failed != nil {
		return part, failed
	}
	return part, nil
}

// putFile stores the file at path under key; an immutable file (a shared
// one) is linked when the object store can (objstore.Linker: a directory
// store on the same file system), not copied.
func (s *Store) putFile(ctx context.Context, key, path string, size int64, immutable bool) error {
	if l, ok := s.obj.(objstore.Linker); ok && immutable {
		if err := l.PutLink(ctx, key, path); err == nil {
			return nil
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return s.obj.Put(ctx, key, f, size)
}

// Complete writes m's metadata, which makes checkpoint m.ID complete.
func (s *Store) Complete(ctx context.Context, m Meta) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("checkpoint %d: encode metadata: %w", m.ID, err)
	}
	if err := s.obj.Put(ctx, metaKey(m.ID), bytes.NewReader(b), int64(len(b))); err != nil {
		return fmt.Errorf("checkpoint %d: write metadata: %w", m.ID, err)
	}
	return nil
}

// List returns the complete checkpoints, oldest first.
func (s *Store) List(ctx context.Context) ([]Meta, error) {
	objs, err := s.obj.List(ctx, "chk/")
	if err != nil {
		return nil, fmt.Errorf("checkpoint: list: %w", err)
	}
	var out []Meta
	for _, o := range objs {
		id, ok := metaID(o.Key)
		if !ok {
			continue
		}
		m, err := s.Get(ctx, id)
		if errors.Is(err, ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// Latest returns the newest complete checkpoint the cluster may restore
// from, or ErrNotFound: the newest of all, but for those a restore from an
// older checkpoint abandoned (see Branch).
func (s *Store) Latest(ctx context.Context) (Meta, error) {
	ids, err := s.ids(ctx)
	if err != nil {
		return Meta{}, err
	}
	b, err := s.Branch(ctx)
	if err != nil {
		return Meta{}, err
	}
	for i := len(ids) - 1; i >= 0; i-- {
		if !b.Abandons(ids[i]) {
			return s.Get(ctx, ids[i])
		}
	}
	return Meta{}, ErrNotFound
}

// Restorable returns the newest complete checkpoint that a rollback or a
// restart may restore: one taken before the newest recorded rollback's
// target, or in that rollback's generation or a later one, and not
// abandoned by a start from a named checkpoint (StartFrom). A checkpoint
// that a coordinator of an older generation finished writing after the
// rollback was decided is skipped: the rollback already discarded what its
// sinks had pre-committed, and its state is from before the rollback.
// ErrNotFound means there is none.
func (s *Store) Restorable(ctx context.Context) (Meta, error) {
	g, err := s.Generation(ctx)
	if err != nil {
		return Meta{}, err
	}
	ids, err := s.ids(ctx)
	if err != nil {
		return Meta{}, err
	}
	b, err := s.Branch(ctx)
	if err != nil {
		return Meta{}, err
	}
	for _, id := range slices.Backward(ids) {
		if b.Abandons(id) {
			continue // newer than a checkpoint the cluster was started from
		}
		m, err := s.Get(ctx, id)
		if errors.Is(err, ErrNotFound) {
			continue // deleted meanwhile by Retain
		}
		if err != nil {
			return Meta{}, err
		}
		if id <= g.Checkpoint || m.Generation >= g.Gen {
			return m, nil
		}
	}
	return Meta{}, ErrNotFound
}

// ids returns the ids of complete checkpoints, ascending.
func (s *Store) ids(ctx context.Context) ([]uint64, error) {
	objs, err := s.obj.List(ctx, "chk/")
	if err != nil {
		return nil, fmt.Errorf("checkpoint: list: %w", err)
	}
	var ids []uint64
	for _, o := range objs {
		if id, ok := metaID(o.Key); ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// metaID parses "chk/<id>/meta.json".
func metaID(key string) (uint64, bool) {
	rest, ok := strings.CutPrefix(key, "chk/")
	if !ok {
		return 0, false
	}
	idStr, file, ok := strings.Cut(rest, "/")
	if !ok || file != "meta.json" {
		return 0, false
	}
	id, err := strconv.ParseUint(idStr, 10, 64)
	return id, err == nil
}

// Get returns checkpoint id's metadata, or ErrNotFound.
func (s *Store) Get(ctx context.Context, id uint64) (Meta, error) {
	r, err := s.obj.Get(ctx, metaKey(id))
	if errors.Is(err, objstore.ErrNotFound) {
		return Meta{}, fmt.Errorf("%w: %d", ErrNotFound, id)
	}
	if err != nil {
		return Meta{}, fmt.Errorf("checkpoint %d: read metadata: %w", id, err)
	}
	defer r.Close()
	var m Meta
	if err := json.NewDecoder(r).Decode(&m); err != nil {
		return Meta{}, fmt.Errorf("checkpoint %d: decode metadata: %w", id, err)
	}
	return m, nil
}

// Fetch materialises node's part of checkpoint m in dir (which must not
// exist), ready for persistence.OpenCheckpoint. Shared files are kept in
// cache (a directory of the same database's files, reused by later
// fetches) and hard-linked into dir.
func (s *Store) Fetch(ctx context.Context, m Meta, node, dir, cache string) error {
	var part *NodePart
	for i := range m.Nodes {
		if m.Nodes[i].Node == node {
			part = &m.Nodes[i]
		}
	}
	if part == nil {
		return fmt.Errorf("%w: checkpoint %d has no part of node %s", ErrNotFound, m.ID, node)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("checkpoint %d: fetch: %w", m.ID, err)
	}
	shared := filepath.Join(cache, part.DB)
	if err := os.MkdirAll(shared, 0o755); err != nil {
		return fmt.Errorf("checkpoint %d: fetch: %w", m.ID, err)
	}
	for _, f := range part.Files {
		key, dst := nodeKey(m.ID, node, f.Name), filepath.Join(dir, f.Name)
		if f.Shared {
			key, dst = sharedKey(part.DB, f.Name), filepath.Join(shared, f.Name)
			if fi, err := os.Stat(dst); err == nil && fi.Size() == f.Size {
				if err := os.Link(dst, filepath.Join(dir, f.Name)); err != nil {
					return fmt.Errorf("checkpoint %d: fetch %s: %w", m.ID, f.Name, err)
				}
				continue
			}
		}
		if err := s.getFile(ctx, key, dst); err != nil {
			return fmt.Errorf("checkpoint %d: fetch %s: %w", m.ID, f.Name, err)
		}
		if f.Shared {
			if err := os.Link(dst, filepath.Join(dir, f.Name)); err != nil {
				return fmt.Errorf("checkpoint %d: fetch %s: %w", m.ID, f.Name, err)
			}
		}
	}
	return nil
}

// getFile downloads key into path (through a temporary file).
func (s *Store) getFile(ctx context.Context, key, path string) error {
	r, err := s.obj.Get(ctx, key)
	if err != nil {
		return err
	}
	defer r.Close()
	tmp := path + ".part"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

// Retain keeps the newest keep complete checkpoints, every savepoint
// (Meta.Savepoint: taken on request, deleted only by hand), and anything
// newer than all of them (a checkpoint in progress), and deletes everything
// else: older checkpoints, parts of checkpoints that never completed, and
// shared files no kept checkpoint references once they are older than the
// oldest of the newest keep (younger ones may belong to a checkpoint in
// progress). It returns the number of objects deleted.
func (s *Store) Retain(ctx context.Context, keep int) (int, error) {
	ids, err := s.ids(ctx)
	if err != nil {
		return 0, err
	}
	if len(ids) <= keep || keep < 1 {
		return 0, nil
	}
	newest := ids[len(ids)-keep:]
	oldestKept := newest[0]
	kept := make(map[uint64]bool)
	referenced := make(map[string]bool)
	var cutoff time.Time
	for _, id := range ids {
		m, err := s.Get(ctx, id)
		if errors.Is(err, ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return 0, err
		}
		if id < oldestKept && !m.Savepoint {
			continue
		}
		kept[id] = true
		if id == oldestKept {
			cutoff = m.Started.Add(-retainMargin)
		}
		for _, p := range m.Nodes {
			for _, f := range p.Files {
				if f.Shared {
					referenced[sharedKey(p.DB, f.Name)] = true
				}
			}
		}
	}
	objs, err := s.obj.List(ctx, "")
	if err != nil {
		return 0, fmt.Errorf("checkpoint: retain: %w", err)
	}
	deleted := 0
	var metas []string // deleted last: a crash mid-way leaves no complete checkpoint without its files
	for _, o := range objs {
		var drop bool
		switch {
		case strings.HasPrefix(o.Key, "sst/"):
			drop = !referenced[o.Key] && o.ModTime.Before(cutoff)
		case strings.HasPrefix(o.Key, "chk/"):
			id, err := strconv.ParseUint(strings.SplitN(strings.TrimPrefix(o.Key, "chk/"), "/", 2)[0], 10, 64)
			drop = err == nil && id < oldestKept && !kept[id]
			if drop && strings.HasSuffix(o.Key, "/meta.json") {
				metas = append(metas, o.Key)
				continue
			}
		}
		if !drop {
			continue
		}
		if err := s.obj.Delete(ctx, o.Key); err != nil {
			return deleted, fmt.Errorf("checkpoint: retain: %w", err)
		}
		deleted++
	}
	for _, k := range metas {
		if err := s.obj.Delete(ctx, k); err != nil {
			return deleted, fmt.Errorf("checkpoint: retain: %w", err)
		}
		deleted++
	}
	return deleted, nil
}

// retainMargin allows for clock differences between the coordinator and
// the store when Retain dates shared files.
const retainMargin = time.Minute

// Generation is the newest rollback the coordinator decided: nodes that
// start later run in it, so that the others accept what they send.
type Generation struct {
	Gen        uint64    `json:"generation"`
	Checkpoint uint64    `json:"checkpoint"`
	At         time.Time `json:"at"`
}

// generationKey is the object holding the newest Generation.
const generationKey = "generation.json"

// SetGeneration records g; the coordinator does before it rolls the nodes
// back.
func (s *Store) SetGeneration(ctx context.Context, g Generation) error {
	b, err := json.Marshal(g)
	if err != nil {
		return fmt.Errorf("checkpoint: encode generation: %w", err)
	}
	if err := s.obj.Put(ctx, generationKey, bytes.NewReader(b), int64(len(b))); err != nil {
		return fmt.Errorf("checkpoint: record generation %d: %w", g.Gen, err)
	}
	return nil
}

// Generation returns the newest recorded Generation (the zero one when
// none was).
func (s *Store) Generation(ctx context.Context) (Generation, error) {
	r, err := s.obj.Get(ctx, generationKey)
	if errors.Is(err, objstore.ErrNotFound) {
		return Generation{}, nil
	}
	if err != nil {
		return Generation{}, fmt.Errorf("checkpoint: read generation: %w", err)
	}
	defer r.Close()
	var g Generation
	if err := json.NewDecoder(r).Decode(&g); err != nil {
		return Generation{}, fmt.Errorf("checkpoint: decode generation: %w", err)
	}
	return g, nil
}
