package checkpoint_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/checkpoint"
	"github.com/sluicehq/sluice/objstore/fsstore"
	"github.com/sluicehq/sluice/persistence"
)

// world is a node database and a checkpoint store on temporary dirs.
type world struct {
	t     *testing.T
	db    *persistence.DB
	store *checkpoint.Store
}

func newWorld(t *testing.T) *world {
	db, err := persistence.Open(t.TempDir(), persistence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	obj, err := fsstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &world{t: t, db: db, store: checkpoint.NewStore(obj)}
}

// write sets n keys in each of groups [0, 8) of "count" to value.
func (w *world) write(n int, value string) {
	s := w.db.NewStore("count")
	for g := range 8 {
		for k := range n {
			s.Set(g, []byte(fmt.Sprintf("k%06d", k)), []byte(value))
		}
	}
	if err := s.Commit(false); err != nil {
		w.t.Fatal(err)
	}
}

// take checkpoints the database as node "n1" and completes checkpoint id.
func (w *world) take(id uint64, base *checkpoint.Meta) checkpoint.Meta {
	w.t.Helper()
	dir := filepath.Join(w.t.TempDir(), "ck")
	files, err := w.db.Checkpoint(dir, []persistence.Span{persistence.GroupSpan("count", 0, 8)})
	if err != nil {
		w.t.Fatal(err)
	}
	part, err := w.store.UploadPart(context.Background(), id, "n1", "db1", dir, files, base)
	if err != nil {
		w.t.Fatal(err)
	}
	part.Groups = []checkpoint.Groups{{Operator: "count", First: 0, End: 8}}
	m := checkpoint.Meta{ID: id, Started: time.Now(), Completed: time.Now(), Nodes: []checkpoint.NodePart{part}}
	if err := w.store.Complete(context.Background(), m); err != nil {
		w.t.Fatal(err)
	}
	return m
}

// A part whose upload fails names the file that failed, not another
// upload stopped because of it.
func TestUploadPartNamesTheFailedFile(t *testing.T) {
	w := newWorld(t)
	w.write(1000, "v1")
	dir := filepath.Join(t.TempDir(), "ck")
	files, err := w.db.Checkpoint(dir, []persistence.Span{persistence.GroupSpan("count", 0, 8)})
	if err != nil {
		t.Fatal(err)
	}
	var gone string
	for _, f := range files {
		if strings.HasPrefix(f.Name, "OPTIONS") {
			gone = f.Name
		}
	}
	if gone == "" || len(files) < 3 {
		t.Fatalf("checkpoint files %v: want several, an OPTIONS file among them", files)
	}
	if err := os.Remove(filepath.Join(dir, gone)); err != nil {
		t.Fatal(err)
	}
	_, err = w.store.UploadPart(context.Background(), 1, "n1", "db1", dir, files, nil)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "upload "+gone) {
		t.Fatalf("upload without %s: %v; want the file's absence named", gone, err)
	}
}

// restored fetches checkpoint m and restores its groups into a fresh
// database, returning the value of one key.
func (w *world) restored(m checkpoint.Meta) string {
	w.t.Helper()
	dir := filepath.Join(w.t.TempDir(), "fetched")
	if err := w.store.Fetch(context.Background(), m, "n1", dir, filepath.Join(w.t.TempDir(), "cache")); err != nil {
		w.t.Fatal(err)
	}
	snap, err := persistence.OpenCheckpoint(dir)
	if err != nil {
		w.t.Fatal(err)
	}
	defer snap.Close()
	fresh, err := persistence.Open(w.t.TempDir(), persistence.Options{})
	if err != nil {
		w.t.Fatal(err)
	}
	defer fresh.Close()
	if _, _, err := fresh.RestoreGroups(snap, "count", 0, 8, w.t.TempDir()); err != nil {
		w.t.Fatal(err)
	}
	v, _, err := fresh.NewStore("count").Get(3, []byte("k000007"))
	if err != nil {
		w.t.Fatal(err)
	}
	return string(v)
}

func TestUploadIsIncrementalAndRestores(t *testing.T) {
	w := newWorld(t)
	w.write(20000, "v1")
	first := w.take(1, nil)
	if first.Uploaded() == 0 || first.Uploaded() != first.Size() {
		t.Fatalf("first checkpoint uploaded %d of %d bytes, want all", first.Uploaded(), first.Size())
	}
	// Change 1% of the keys: the second checkpoint sends far less.
	s := w.db.NewStore("count")
	for g := range 8 {
		for k := range 200 {
			s.Set(g, []byte(fmt.Sprintf("k%06d", k)), []byte("v2"))
		}
	}
	if err := s.Commit(false); err != nil {
		t.Fatal(err)
	}
	second := w.take(2, &first)
	t.Logf("first checkpoint: %d bytes; second after 1%% changed: %d of %d bytes uploaded", first.Uploaded(), second.Uploaded(), second.Size())
	if second.Uploaded()*4 > second.Size() {
		t.Fatalf("second checkpoint uploaded %d of %d bytes: not incremental", second.Uploaded(), second.Size())
	}
	if got := w.restored(first); got != "v1" {
		t.Fatalf("restored first = %q, want v1", got)
	}
	if got := w.restored(second); got != "v2" {
		t.Fatalf("restored second = %q, want v2", got)
	}
	latest, err := w.store.Latest(context.Background())
	if err != nil || latest.ID != 2 {
		t.Fatalf("latest = %d, %v; want 2", latest.ID, err)
	}
}

func TestRetainKeepsTheNewest(t *testing.T) {
	w := newWorld(t)
	var last *checkpoint.Meta
	for id := uint64(1); id <= 5; id++ {
		w.write(2000, fmt.Sprintf("v%d", id))
		m := w.take(id, last)
		last = &m
	}
	// An unfinished checkpoint older than the kept ones leaves a part.
	ctx := context.Background()
	deleted, err := w.store.Retain(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	list, err := w.store.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != 4 || list[1].ID != 5 {
		t.Fatalf("after Retain(2): %d checkpoints, want 4 and 5", len(list))
	}
	if deleted == 0 {
		t.Fatal("Retain deleted nothing")
	}
	if _, err := w.store.Get(ctx, 3); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("Get(3) after Retain: %v, want ErrNotFound", err)
	}
	// What is kept still restores.
	if got := w.restored(list[0]); got != "v4" {
		t.Fatalf("restored 4 = %q, want v4", got)
	}
	if got := w.restored(list[1]); got != "v5" {
		t.Fatalf("restored 5 = %q, want v5", got)
	}
}

// TestRestorableSkipsACheckpointOfAnOlderGeneration: a checkpoint that an
// older coordinator finished storing after a rollback was decided is not
// what the next rollback or restart restores; one taken before the
// rollback's target, or in its generation, is.
func TestRestorableSkipsACheckpointOfAnOlderGeneration(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	if _, err := w.store.Restorable(ctx); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("Restorable with no checkpoint: %v, want ErrNotFound", err)
	}
	complete := func(id, gen uint64) {
		t.Helper()
		if err := w.store.Complete(ctx, checkpoint.Meta{ID: id, Generation: gen, Started: time.Now(), Completed: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	want := func(id uint64) {
		t.Helper()
		m, err := w.store.Restorable(ctx)
		if err != nil || m.ID != id {
			t.Fatalf("Restorable = %d, %v; want %d", m.ID, err, id)
		}
	}
	complete(10, 0)
	complete(20, 0)
	want(20)
	// A rollback in generation 5 goes back to 20; checkpoint 30 of
	// generation 0 lands in the store afterwards.
	if err := w.store.SetGeneration(ctx, checkpoint.Generation{Gen: 5, Checkpoint: 20}); err != nil {
		t.Fatal(err)
	}
	complete(30, 0)
	want(20)
	complete(40, 5)
	want(40)
}

// Savepoints survive Retain however old they are.
func TestRetainKeepsSavepoints(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	var last *checkpoint.Meta
	for id := uint64(1); id <= 5; id++ {
		w.write(2000, fmt.Sprintf("v%d", id))
		m := w.take(id, last)
		if id == 2 {
			m.Savepoint = true
			if err := w.store.Complete(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
		last = &m
	}
	if _, err := w.store.Retain(ctx, 2); err != nil {
		t.Fatal(err)
	}
	list, err := w.store.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []uint64
	for _, m := range list {
		ids = append(ids, m.ID)
	}
	if fmt.Sprint(ids) != "[2 4 5]" {
		t.Fatalf("after Retain(2): checkpoints %v, want [2 4 5] (2 is a savepoint)", ids)
	}
	if got := w.restored(list[0]); got != "v2" {
		t.Fatalf("restored savepoint 2 = %q, want v2", got)
	}
}

// Starting from an older checkpoint abandons the newer ones: Latest skips
// them, and only until the cluster completes newer ones itself; starting
// from the same checkpoint again changes nothing.
func TestStartFromAbandonsNewer(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	var last *checkpoint.Meta
	for id := uint64(1); id <= 3; id++ {
		w.write(10, fmt.Sprintf("v%d", id))
		m := w.take(id, last)
		last = &m
	}
	if _, err := w.store.StartFrom(ctx, 9); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("StartFrom(9): %v, want ErrNotFound", err)
	}
	m, err := w.store.StartFrom(ctx, 1)
	if err != nil || m.ID != 1 {
		t.Fatalf("StartFrom(1) = %d, %v; want 1", m.ID, err)
	}
	if m, err := w.store.Latest(ctx); err != nil || m.ID != 1 {
		t.Fatalf("Latest after StartFrom(1) = %d, %v; want 1", m.ID, err)
	}
	w.take(4, last)
	for range 2 { // the first restore only starts from 1
		if m, err := w.store.StartFrom(ctx, 1); err != nil || m.ID != 4 {
			t.Fatalf("StartFrom(1) again = %d, %v; want 4 (completed since)", m.ID, err)
		}
	}
	if m, err := w.store.StartFrom(ctx, 2); err != nil || m.ID != 2 {
		t.Fatalf("StartFrom(2) = %d, %v; want 2", m.ID, err)
	}
}
