package file

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/sdk"
)

// Under exactly-once a sink instance writes the lines between two
// checkpoint barriers to a part file of its own, next to Path:
//
//	.<base>.inprogress-<tag>           lines since the last barrier
//	.<base>.pending-<checkpoint>-<tag> fsynced at the barrier (PreCommit)
//	<base>.part-<checkpoint>-<tag>     renamed when the checkpoint completes (Commit)
//
// where base is Path's file name, checkpoint has 20 digits and tag is
// "<operator>-<first key group, 5 digits>", so that names sort by
// checkpoint and a reader gets every line once, in checkpoint order, from
// the committed parts in name order (cat <base>.part-*). Parts in progress
// and pending start with '.' and do not match that pattern.
//
// State, in the instance's first key group:
//
//	file/part/<tag>/<checkpoint> → Path: a pending part known to the checkpoint
//	file/writer/<tag>            → Path: a writer whose leftovers this state's
//	                               owner cleans up in Init
const (
	partPrefix   = "file/part/"
	writerPrefix = "file/writer/"
)

// partKey names a pending part: its writer's tag and its checkpoint.
type partKey struct {
	tag        string
	checkpoint uint64
}

// partWriter writes an exactly-once sink instance's parts. Its methods
// run on the instance's goroutine.
type partWriter struct {
	cfg   SinkConfig
	tag   string
	log   *slog.Logger
	f     *os.File // the part in progress; nil until the first line after a barrier
	buf   []byte   // whole lines not yet written to f
	fatal error    // sticky: a failed fsync; written data may be lost

	pending map[partKey]string // pending parts known to State (of any writer), → Path
	// orphans are pending parts State does not know of, → Path. They were
	// written after the checkpoint State was restored from, but one may
	// belong to a checkpoint that completed without this node hearing of
	// it (its coordinator stopped coordinating or crashed while storing
	// it): a rollback to that checkpoint commits it. So they are deleted
	// only once a newer checkpoint completes (commit), when no rollback
	// can go back to theirs.
	orphans map[partKey]string
}

// partTag returns the tag of the instance of operator op whose first key
// group is group.
func partTag(op string, group int) string { return fmt.Sprintf("%s-%05d", op, group) }

// partNames returns the in-progress, pending and committed names of the
// part of tag for checkpoint under path.
func partNames(path, tag string, checkpoint uint64) (inprogress, pending, committed string) {
	dir, base := filepath.Split(path)
	return filepath.Join(dir, "."+base+".inprogress-"+tag),
		filepath.Join(dir, fmt.Sprintf(".%s.pending-%020d-%s", base, checkpoint, tag)),
		filepath.Join(dir, fmt.Sprintf("%s.part-%020d-%s", base, checkpoint, tag))
}

// newPartWriter reads the pending parts State knows of and cleans up the
// parts of every writer it knows of (its own, and those of other key
// groups' state after a rescale) that State does not know: written after
// the checkpoint State was restored from (cleanUp).
func newPartWriter(ctx sdk.Context, cfg SinkConfig) (*partWriter, error) {
	info := ctx.Instance()
	w := &partWriter{cfg: cfg, tag: partTag(info.Operator, info.FirstGroup), log: ctx.Logger(), pending: map[partKey]string{},
		orphans: map[partKey]string{}}
	writers := map[string]bool{w.tag + "\x00" + cfg.Path: true} // "<tag>\x00<path>"
	st := ctx.State()
	err := sdk.ScanAllGroups(st, []byte("file/"), func(key, value []byte) error {
		k := string(key)
		switch {
		case strings.HasPrefix(k, partPrefix):
			tag, ckpt, ok := strings.Cut(k[len(partPrefix):], "/")
			n, err := strconv.ParseUint(ckpt, 10, 64)
			if !ok || err != nil {
				return fmt.Errorf("bad part key %q", k)
			}
			w.pending[partKey{tag, n}] = string(value)
			writers[tag+"\x00"+string(value)] = true
		case strings.HasPrefix(k, writerPrefix):
			writers[k[len(writerPrefix):]+"\x00"+string(value)] = true
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read parts from state: %w", err)
	}
	for _, key := range slices.Sorted(maps.Keys(writers)) {
		tag, path, _ := strings.Cut(key, "\x00")
		if err := w.cleanUp(path, tag); err != nil {
			return nil, err
		}
	}
	st.Set([]byte(writerPrefix+w.tag), []byte(cfg.Path))
	return w, nil
}

// cleanUp deletes the part in progress of tag under path (its lines are
// in no checkpoint) and keeps its pending parts that State does not know
// of as orphans (see partWriter.orphans).
func (w *partWriter) cleanUp(path, tag string) error {
	inprogress, _, _ := partNames(path, tag, 0)
	switch err := os.Remove(inprogress); {
	case err == nil:
		w.log.Info("file sink: deleted the part in progress of a previous incarnation", "path", path, "writer", tag)
		if err := syncDir(filepath.Dir(inprogress)); err != nil {
			return err
		}
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("delete the part in progress: %w", err)
	}
	dir, base := filepath.Split(path)
	entries, err := os.ReadDir(filepath.Clean(dir))
	if err != nil {
		return fmt.Errorf("list the parts of %s: %w", path, err)
	}
	prefix, suffix := "."+base+".pending-", "-"+tag
	kept := 0
	for _, e := range entries {
		digits, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || len(digits) != 20+len(suffix) || digits[20:] != suffix {
			continue
		}
		n, err := strconv.ParseUint(digits[:20], 10, 64)
		if err != nil {
			continue
		}
		if k := (partKey{tag, n}); !w.known(k) {
			w.orphans[k] = path
			kept++
		}
	}
	if kept > 0 {
		w.log.Info("file sink: pending parts the restored checkpoint does not know; deleted once a newer checkpoint completes",
			"path", path, "writer", tag, "parts", kept)
	}
	return nil
}

// dropOrphans deletes the orphans of checkpoints before checkpoint, which
// completed: no rollback goes back past it.
func (w *partWriter) dropOrphans(checkpoint uint64) error {
	dirs := map[string]bool{}
	for k, path := range w.orphans {
		if k.checkpoint >= checkpoint || w.known(k) {
			continue
		}
		_, pending, _ := partNames(path, k.tag, k.checkpoint)
		if err := os.Remove(pending); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("delete a pending part no checkpoint holds: %w", err)
		}
		delete(w.orphans, k)
		dirs[filepath.Dir(pending)] = true
		w.log.Info("file sink: deleted a pending part written after the checkpoint it was restored from", "part", pending)
	}
	for _, dir := range slices.Sorted(maps.Keys(dirs)) {
		if err := syncDir(dir); err != nil {
			return err
		}
	}
	return nil
}

// add adds rec's line to the buffer, first writing the buffer to the part
// in progress when the line would make it exceed BufferSize (if that
// fails, the attempt fails before the line is buffered).
func (w *partWriter) add(rec sdk.Record) error {
	if w.fatal != nil {
		return w.fatal
	}
	if len(w.buf) > 0 && len(w.buf)+lineLen(w.cfg.Format, rec) > w.cfg.BufferSize {
		if err := w.write(); err != nil {
			return err
		}
	}
	w.buf = appendLine(w.buf, w.cfg.Format, rec)
	return nil
}

// write writes the buffer to the part in progress, creating it if needed.
// After a partial write it keeps the rest for the next try.
func (w *partWriter) write() error {
	if w.f == nil {
		inprogress, _, _ := partNames(w.cfg.Path, w.tag, 0)
		f, err := os.OpenFile(inprogress, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, w.cfg.Perm)
		if err != nil {
			return fmt.Errorf("create the part in progress: %w", err)
		}
		w.f = f
	}
	n, err := w.f.Write(w.buf)
	w.buf = w.buf[:copy(w.buf, w.buf[n:])]
	if err != nil {
		return fmt.Errorf("write %s: %w", w.f.Name(), err)
	}
	return nil
}

// preCommit makes the lines since the last barrier the pending part of
// checkpoint: written, fsynced, renamed, directory fsynced, in State.
// When a rename fails the part stays in progress and the next preCommit
// takes it; a failed fsync is fatal for the instance (the kernel may have
// dropped the data, and a later fsync would not say so).
func (w *partWriter) preCommit(st sdk.State, checkpoint uint64) error {
	if w.fatal != nil {
		return w.fatal
	}
	if w.f == nil && len(w.buf) == 0 {
		return nil // nothing since the last barrier
	}
	if err := w.write(); err != nil {
		return err
	}
	if err := w.f.Sync(); err != nil {
		w.fatal = fmt.Errorf("fsync %s: %w (its lines may be lost: restore the instance from the last checkpoint)", w.f.Name(), err)
		return w.fatal
	}
	inprogress, pending, _ := partNames(w.cfg.Path, w.tag, checkpoint)
	if err := os.Rename(inprogress, pending); err != nil {
		return fmt.Errorf("rename the part in progress: %w", err)
	}
	if err := syncDir(filepath.Dir(pending)); err != nil {
		w.fatal = fmt.Errorf("%w (the pending part may be lost: restore the instance from the last checkpoint)", err)
		return w.fatal
	}
	if err := w.f.Close(); err != nil {
		w.log.Warn("file sink: closing a pending part failed after it was synced", "path", pending, "error", err)
	}
	w.f = nil
	st.Set(fmt.Appendf(nil, "%s%s/%020d", partPrefix, w.tag, checkpoint), []byte(w.cfg.Path))
	w.pending[partKey{w.tag, checkpoint}] = w.cfg.Path
	delete(w.orphans, partKey{w.tag, checkpoint}) // replaced by the rename
	return nil
}

// commit renames the pending parts of checkpoint and earlier ones to
// their committed names, in checkpoint order, fsyncs their directories,
// and only then forgets them (State keeps them until the renames are
// durable).
func (w *partWriter) commit(st sdk.State, checkpoint uint64) error {
	var due []partKey
	for k := range w.pending {
		if k.checkpoint <= checkpoint {
			due = append(due, k)
		}
	}
	slices.SortFunc(due, func(a, b partKey) int {
		return cmp.Or(cmp.Compare(a.checkpoint, b.checkpoint), strings.Compare(a.tag, b.tag))
	})
	dirs := map[string]bool{}
	var errs []error
	var done []partKey
	for _, k := range due {
		_, pending, committed := partNames(w.pending[k], k.tag, k.checkpoint)
		err := os.Rename(pending, committed)
		if errors.Is(err, fs.ErrNotExist) {
			if _, serr := os.Stat(committed); serr != nil {
				// Neither pending nor committed: committed before, and
				// moved away since by whoever reads the output.
				w.log.Info("file sink: a part to commit is neither pending nor committed; it was committed and consumed", "part", committed, "checkpoint", k.checkpoint)
			}
			err = nil
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("commit %s: %w", pending, err))
			continue
		}
		dirs[filepath.Dir(committed)] = true
		done = append(done, k)
	}
	for _, dir := range slices.Sorted(maps.Keys(dirs)) {
		if err := syncDir(dir); err != nil {
			return errors.Join(append(errs, err)...) // keep them all: the next Commit renames again
		}
	}
	for _, k := range done {
		if k.tag == w.tag {
			st.Delete(fmt.Appendf(nil, "%s%s/%020d", partPrefix, k.tag, k.checkpoint))
		}
		// Another writer's entry is in another key group's state, which
		// cannot be changed from here; committing it again is harmless.
		delete(w.pending, k)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return w.dropOrphans(checkpoint)
}

// known reports whether State lists pending part k.
func (w *partWriter) known(k partKey) bool {
	_, ok := w.pending[k]
	return ok
}

// close closes and deletes the part in progress: its lines are after the
// last barrier, and come again after a restore.
func (w *partWriter) close() error {
	if w.f == nil {
		return nil
	}
	name := w.f.Name()
	err := w.f.Close()
	w.f, w.buf = nil, nil
	if rerr := os.Remove(name); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) && err == nil {
		err = rerr
	}
	return err
}

// syncDir fsyncs directory dir, making renames and deletions in it
// durable.
func syncDir(dir string) error {
	d, err := os.Open(filepath.Clean(dir))
	if err != nil {
		return fmt.Errorf("open directory %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}
