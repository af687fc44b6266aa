package objfile

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/objstore"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/connect"
)

// PreCommit implements connect.Transactions: it puts the transaction's
// files not put yet as pending objects, then its handle (the final keys,
// named by checkpoint) as the checkpoint's marker, and returns the
// handle. If a Put fails the transaction stays open and the next
// PreCommit takes it (files already put are not put again).
func (f *files) PreCommit(_ sdk.Context, checkpoint uint64) ([]byte, error) {
	if _, err := f.seal(); err != nil {
		return nil, err
	}
	if err := f.upload(); err != nil {
		return nil, err
	}
	handle := append([]byte(f.txn), '\n')
	for n, fl := range f.sealed {
		final := fmt.Sprintf("%s%s%s-%020d-%06d%s", f.cfg.Prefix, fl.partition, f.writer, checkpoint, n, f.cfg.Format.ext())
		handle = append(append(handle, final...), '\n')
	}
	if key := f.markerKey(f.writer, checkpoint); len(f.sealed) > 0 {
		if err := f.putBytes(key, handle); err != nil {
			// It may be there all the same; a marker that names this
			// open transaction must not outlive its failure.
			if derr := f.delete(key); derr != nil {
				f.log.Warn("object file sink: could not delete the marker of a failed pre-commit", "key", key, "error", derr)
			}
			return nil, fmt.Errorf("put the marker %s: %w", key, err)
		}
	}
	f.sealed, f.put = nil, 0
	return handle, nil
}

// Commit implements connect.Transactions: for each file of txn it copies
// the pending object to its final key and deletes the pending one, then
// deletes the marker. A file whose pending object is gone was committed
// before (its final object is there, or was consumed since). Re-running
// it after a crash between the steps puts the same bytes under the same
// key again.
func (f *files) Commit(_ sdk.Context, txn connect.Txn) error {
	name, finals := parseHandle(txn.Handle)
	for n, final := range finals {
		pending := f.pendingKey(txn.Writer, name, n)
		data, err := f.get(pending)
		if errors.Is(err, objstore.ErrNotFound) {
			if _, serr := f.stat(final); errors.Is(serr, objstore.ErrNotFound) {
				f.log.Info("object file sink: a file to commit is neither pending nor final; it was committed and consumed",
					"key", final, "checkpoint", txn.Checkpoint)
			} else if serr != nil {
				return fmt.Errorf("check the final file %s: %w", final, serr)
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("read the pending file %s: %w", pending, err)
		}
		if err := f.putBytes(final, data); err != nil {
			return fmt.Errorf("put the final file %s: %w", final, err)
		}
		f.committed(len(data))
		if err := f.delete(pending); err != nil {
			return fmt.Errorf("delete the committed pending file %s: %w", pending, err)
		}
	}
	if err := f.delete(f.markerKey(txn.Writer, txn.Checkpoint)); err != nil {
		return fmt.Errorf("delete the marker of a committed checkpoint: %w", err)
	}
	return nil
}

// Abort implements connect.Transactions: it deletes the pending files
// and the marker of txn, prepared for a checkpoint no State lists.
func (f *files) Abort(_ sdk.Context, txn connect.Txn) error {
	name, _ := parseHandle(txn.Handle)
	n, err := f.deleteAll(f.pendingDir(txn.Writer) + name + "-")
	if err != nil {
		return err
	}
	if err := f.delete(f.markerKey(txn.Writer, txn.Checkpoint)); err != nil {
		return fmt.Errorf("delete the marker of an aborted checkpoint: %w", err)
	}
	f.log.Info("object file sink: deleted pending files written after the checkpoint it was restored from",
		"writer", txn.Writer, "checkpoint", txn.Checkpoint, "files", n)
	return nil
}

// deleteAll deletes the objects under prefix and returns how many.
func (f *files) deleteAll(prefix string) (int, error) {
	objs, err := f.list(prefix)
	if err != nil {
		return 0, fmt.Errorf("list the pending files %s: %w", prefix, err)
	}
	for _, o := range objs {
		if err := f.delete(o.Key); err != nil {
			return 0, fmt.Errorf("delete the pending file %s: %w", o.Key, err)
		}
	}
	return len(objs), nil
}

// Recover implements connect.Recoverer: it returns writer's prepared
// transactions (its markers) and deletes the files of transactions no
// marker names (open when the writer stopped: their records come again).
func (f *files) Recover(_ sdk.Context, writer string, _ []byte) ([]connect.Txn, error) {
	dir := f.pendingDir(writer)
	objs, err := f.list(dir)
	if err != nil {
		return nil, fmt.Errorf("list the pending files %s: %w", dir, err)
	}
	var out []connect.Txn
	prepared := map[string]bool{}
	for _, o := range objs {
		ckpt, ok := strings.CutSuffix(o.Key[len(dir):], ".txn")
		n, err := strconv.ParseUint(ckpt, 10, 64)
		if !ok || err != nil {
			continue
		}
		handle, err := f.get(o.Key)
		if err != nil {
			return nil, fmt.Errorf("read the marker %s: %w", o.Key, err)
		}
		name, _ := parseHandle(handle)
		prepared[name] = true
		out = append(out, connect.Txn{Writer: writer, Checkpoint: n, Handle: handle})
	}
	var stale int
	for _, o := range objs {
		name, _, ok := strings.Cut(o.Key[len(dir):], "-")
		if !ok || strings.HasSuffix(o.Key, ".txn") || prepared[name] {
			continue
		}
		if err := f.delete(o.Key); err != nil {
			return nil, fmt.Errorf("delete the pending file %s of an open transaction: %w", o.Key, err)
		}
		stale++
	}
	if stale > 0 {
		f.log.Info("object file sink: deleted the files of a transaction open when its writer stopped", "writer", writer, "files", stale)
	}
	return out, nil
}
