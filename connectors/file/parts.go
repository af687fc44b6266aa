package file

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/connect"
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
// State, in the instance's first key group, is connect.TwoPhase's under
// "file/" (the handle of a pending part is Path, as is its writer's
// scope):
//
//	file/txn/<tag>/<checkpoint> → Path: a pending part known to the checkpoint
//	file/writer/<tag>           → Path: a writer whose leftovers this state's
//	                              owner cleans up in Init
const statePrefix = "file/"

// partWriter writes an exactly-once sink instance's parts: it is the
// connect.Transactions (and connect.Recoverer) of the instance's
// connect.TwoPhase, which keeps the pending parts in State, commits them
// per checkpoint and deletes the orphans (pending parts State does not
// know of) once a newer checkpoint completes. Its methods run on the
// instance's goroutine.
type partWriter struct {
	cfg   SinkConfig
	tag   string
	log   *slog.Logger
	f     *os.File // the part in progress; nil until the first line after a barrier
	buf   []byte   // whole lines not yet written to f
	fatal error    // sticky: a failed fsync; written data may be lost
}

var (
	_ connect.Transactions = (*partWriter)(nil)
	_ connect.Recoverer    = (*partWriter)(nil)
)

// partNames returns the in-progress, pending and committed names of the
// part of tag for checkpoint under path.
func partNames(path, tag string, checkpoint uint64) (inprogress, pending, committed string) {
	dir, base := filepath.Split(path)
	return filepath.Join(dir, "."+base+".inprogress-"+tag),
		filepath.Join(dir, fmt.Sprintf(".%s.pending-%020d-%s", base, checkpoint, tag)),
		filepath.Join(dir, fmt.Sprintf("%s.part-%020d-%s", base, checkpoint, tag))
}

// newPartWriter returns the part writer of the instance; tag is its
// connect.WriterName. TwoPhase.Init then recovers (Recover) the parts of
// every writer State knows of: its own, and those of other key groups'
// state after a rescale.
func newPartWriter(ctx sdk.Context, cfg SinkConfig) *partWriter {
	info := ctx.Instance()
	return &partWriter{cfg: cfg, tag: connect.WriterName(info.Operator, info.FirstGroup), log: ctx.Logger()}
}

// Recover implements connect.Recoverer: it deletes the part in progress
// of writer tag under path (scope; its lines are in no checkpoint) and
// returns its pending parts.
func (w *partWriter) Recover(_ sdk.Context, tag string, scope []byte) ([]connect.Txn, error) {
	path := string(scope)
	inprogress, _, _ := partNames(path, tag, 0)
	switch err := os.Remove(inprogress); {
	case err == nil:
		w.log.Info("file sink: deleted the part in progress of a previous incarnation", "path", path, "writer", tag)
		if err := syncDir(filepath.Dir(inprogress)); err != nil {
			return nil, err
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("delete the part in progress: %w", err)
	}
	dir, base := filepath.Split(path)
	entries, err := os.ReadDir(filepath.Clean(dir))
	if err != nil {
		return nil, fmt.Errorf("list the parts of %s: %w", path, err)
	}
	prefix, suffix := "."+base+".pending-", "-"+tag
	var out []connect.Txn
	for _, e := range entries {
		digits, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || len(digits) != 20+len(suffix) || digits[20:] != suffix {
			continue
		}
		n, err := strconv.ParseUint(digits[:20], 10, 64)
		if err != nil {
			continue
		}
		out = append(out, connect.Txn{Writer: tag, Checkpoint: n, Handle: scope})
	}
	return out, nil
}

// Abort implements connect.Transactions: it deletes a pending part no
// checkpoint holds.
func (w *partWriter) Abort(_ sdk.Context, txn connect.Txn) error {
	_, pending, _ := partNames(string(txn.Handle), txn.Writer, txn.Checkpoint)
	if err := os.Remove(pending); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete a pending part no checkpoint holds: %w", err)
	}
	w.log.Info("file sink: deleted a pending part written after the checkpoint it was restored from", "part", pending)
	return syncDir(filepath.Dir(pending))
}

// Begin implements connect.Transactions: the part in progress is created
// when the first lines are written to it.
func (w *partWriter) Begin(sdk.Context) error { return nil }

// Write implements connect.Transactions (see add).
func (w *partWriter) Write(_ sdk.Context, rec sdk.Record) error { return w.add(rec) }

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

// PreCommit implements connect.Transactions: it makes the lines since
// the last barrier the pending part of checkpoint (written, fsynced,
// renamed, directory fsynced) and returns Path as its handle. When a
// rename fails the part stays in progress and the next PreCommit takes
// it; a failed fsync is fatal for the instance (the kernel may have
// dropped the data, and a later fsync would not say so).
func (w *partWriter) PreCommit(_ sdk.Context, checkpoint uint64) ([]byte, error) {
	if w.fatal != nil {
		return nil, w.fatal
	}
	if err := w.write(); err != nil {
		return nil, err
	}
	if err := w.f.Sync(); err != nil {
		w.fatal = fmt.Errorf("fsync %s: %w (its lines may be lost: restore the instance from the last checkpoint)", w.f.Name(), err)
		return nil, w.fatal
	}
	inprogress, pending, _ := partNames(w.cfg.Path, w.tag, checkpoint)
	if err := os.Rename(inprogress, pending); err != nil {
		return nil, fmt.Errorf("rename the part in progress: %w", err)
	}
	if err := syncDir(filepath.Dir(pending)); err != nil {
		w.fatal = fmt.Errorf("%w (the pending part may be lost: restore the instance from the last checkpoint)", err)
		return nil, w.fatal
	}
	if err := w.f.Close(); err != nil {
		w.log.Warn("file sink: closing a pending part failed after it was synced", "path", pending, "error", err)
	}
	w.f = nil
	return []byte(w.cfg.Path), nil
}

// Commit implements connect.Transactions: it renames pending part txn to
// its committed name and fsyncs the directory (TwoPhase forgets it only
// then). A part neither pending nor committed was committed before and
// consumed since.
func (w *partWriter) Commit(_ sdk.Context, txn connect.Txn) error {
	_, pending, committed := partNames(string(txn.Handle), txn.Writer, txn.Checkpoint)
	err := os.Rename(pending, committed)
	if errors.Is(err, fs.ErrNotExist) {
		if _, serr := os.Stat(committed); serr != nil {
			// Neither pending nor committed: committed before, and
			// moved away since by whoever reads the output.
			w.log.Info("file sink: a part to commit is neither pending nor committed; it was committed and consumed", "part", committed, "checkpoint", txn.Checkpoint)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("commit %s: %w", pending, err)
	}
	return syncDir(filepath.Dir(committed))
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
