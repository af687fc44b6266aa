package objfile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/objstore"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/connect"
)

// Keys, under SinkConfig.Prefix (checkpoint with 20 digits, n with 6):
//
//	<PendingPrefix><writer>/<checkpoint>-<n>      file n of writer's checkpoint, put at PreCommit
//	<partition><writer>-<checkpoint>-<n>.jsonl    the same bytes, put at Commit
//	<partition><writer>-f<unix ns>-<n>.jsonl      a file of a Flush (not exactly-once)
//
// writer is connect.WriterName. The handle of a prepared transaction is
// the final keys of its files, one a line, file n on line n.

// file is one rolling file being filled: its partition and lines.
type file struct {
	partition string
	buf       bytes.Buffer
	records   int
}

// files is the connect.Transactions (and connect.Recoverer) of one sink
// instance. Records of the open transaction are held in memory until
// PreCommit (or Flush) puts them: see the package documentation. Its
// methods run on the instance's goroutine.
type files struct {
	cfg    SinkConfig
	writer string
	log    *slog.Logger
	open   map[string]*file // by partition: the file each partition fills
	sealed []*file          // rolled, and the open ones at PreCommit, in order
}

var (
	_ connect.Transactions = (*files)(nil)
	_ connect.Recoverer    = (*files)(nil)
)

func (f *files) pendingDir(writer string) string {
	return f.cfg.Prefix + f.cfg.PendingPrefix + writer + "/"
}

func (f *files) pendingKey(writer string, checkpoint uint64, n int) string {
	return fmt.Sprintf("%s%020d-%06d", f.pendingDir(writer), checkpoint, n)
}

// Begin implements connect.Transactions: it drops whatever a failed
// attempt left.
func (f *files) Begin(sdk.Context) error {
	f.open, f.sealed = map[string]*file{}, nil
	return nil
}

// Write implements connect.Transactions: it appends rec's value and '\n'
// to the file of its partition, rolling it at RollBytes or RollRecords.
func (f *files) Write(_ sdk.Context, rec sdk.Record) error {
	if f.open == nil {
		f.open = map[string]*file{}
	}
	p := partition(f.cfg, rec)
	cur := f.open[p]
	if cur == nil {
		cur = &file{partition: p}
		f.open[p] = cur
	}
	cur.buf.Write(rec.Value)
	cur.buf.WriteByte('\n')
	cur.records++
	if cur.buf.Len() >= f.cfg.RollBytes || cur.records >= f.cfg.RollRecords {
		f.sealed = append(f.sealed, cur)
		delete(f.open, p)
	}
	return nil
}

// seal closes the open files, in partition order, and returns every file
// of the transaction.
func (f *files) seal() []*file {
	parts := make([]string, 0, len(f.open))
	for p := range f.open {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	for _, p := range parts {
		f.sealed = append(f.sealed, f.open[p])
	}
	f.open = map[string]*file{}
	return f.sealed
}

// PreCommit implements connect.Transactions: it puts the transaction's
// files as pending objects of checkpoint and returns their final keys.
// If a Put fails the files stay for the next PreCommit (which puts them
// all again, under that checkpoint's names).
func (f *files) PreCommit(ctx sdk.Context, checkpoint uint64) ([]byte, error) {
	files := f.seal()
	var handle []byte
	for n, fl := range files {
		key := f.pendingKey(f.writer, checkpoint, n)
		if err := f.put(key, fl.buf.Bytes()); err != nil {
			f.unput(checkpoint, n)
			return nil, fmt.Errorf("put the pending file %s: %w", key, err)
		}
		f.cfg.Stats.PendingFiles.Add(1)
		final := fmt.Sprintf("%s%s%s-%020d-%06d.jsonl", f.cfg.Prefix, fl.partition, f.writer, checkpoint, n)
		handle = append(append(handle, final...), '\n')
	}
	f.sealed = nil
	return handle, nil
}

// unput deletes, as far as it can, the first n pending files of a failed
// PreCommit for checkpoint (what is left is deleted by a later recovery:
// see Recover).
func (f *files) unput(checkpoint uint64, n int) {
	for i := range n {
		key := f.pendingKey(f.writer, checkpoint, i)
		if err := f.delete(key); err != nil {
			f.log.Warn("object file sink: could not delete a pending file of a failed pre-commit", "key", key, "error", err)
		}
	}
}

// Commit implements connect.Transactions: for each file of txn it copies
// the pending object to its final key and deletes the pending one. A file
// whose pending object is gone was committed before (its final object is
// there, or was consumed since). Re-running it after a crash between the
// two steps puts the same bytes under the same key again.
func (f *files) Commit(_ sdk.Context, txn connect.Txn) error {
	for n, final := range finalKeys(txn.Handle) {
		pending := f.pendingKey(txn.Writer, txn.Checkpoint, n)
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
		if err := f.put(final, data); err != nil {
			return fmt.Errorf("put the final file %s: %w", final, err)
		}
		f.committed(len(data))
		if err := f.delete(pending); err != nil {
			return fmt.Errorf("delete the committed pending file %s: %w", pending, err)
		}
	}
	return nil
}

// Abort implements connect.Transactions: it deletes the pending objects
// of txn (whatever its handle says: Recover lists them).
func (f *files) Abort(_ sdk.Context, txn connect.Txn) error {
	prefix := fmt.Sprintf("%s%020d-", f.pendingDir(txn.Writer), txn.Checkpoint)
	objs, err := f.list(prefix)
	if err != nil {
		return fmt.Errorf("list the pending files %s: %w", prefix, err)
	}
	for _, o := range objs {
		if err := f.delete(o.Key); err != nil {
			return fmt.Errorf("delete the pending file %s no checkpoint holds: %w", o.Key, err)
		}
	}
	f.log.Info("object file sink: deleted pending files written after the checkpoint it was restored from",
		"writer", txn.Writer, "checkpoint", txn.Checkpoint, "files", len(objs))
	return nil
}

// Recover implements connect.Recoverer: the open transaction is in
// memory only, so nothing is discarded; it returns writer's checkpoints
// with pending objects.
func (f *files) Recover(_ sdk.Context, writer string, _ []byte) ([]connect.Txn, error) {
	dir := f.pendingDir(writer)
	objs, err := f.list(dir)
	if err != nil {
		return nil, fmt.Errorf("list the pending files %s: %w", dir, err)
	}
	var out []connect.Txn
	seen := map[uint64]bool{}
	for _, o := range objs {
		ckpt, _, ok := strings.Cut(o.Key[len(dir):], "-")
		n, err := strconv.ParseUint(ckpt, 10, 64)
		if !ok || err != nil || len(ckpt) != 20 || seen[n] {
			continue
		}
		seen[n] = true
		out = append(out, connect.Txn{Writer: writer, Checkpoint: n})
	}
	return out, nil
}

// Flush is what the sink does per Flush under the guarantees other than
// exactly-once: it puts the open transaction's files under final keys
// named by the time.
func (f *files) Flush(sdk.Context) error {
	files := f.seal()
	stamp := time.Now().UnixNano()
	for n, fl := range files {
		key := fmt.Sprintf("%s%s%s-f%020d-%06d.jsonl", f.cfg.Prefix, fl.partition, f.writer, stamp, n)
		if err := f.put(key, fl.buf.Bytes()); err != nil {
			// What was put stays; the rest comes again at the next Flush.
			f.sealed = files[n:]
			return fmt.Errorf("put the file %s: %w", key, err)
		}
		f.committed(fl.buf.Len())
	}
	f.sealed = nil
	return nil
}

// committed counts a file of size bytes put under its final key.
func (f *files) committed(size int) {
	f.cfg.Stats.Files.Add(1)
	f.cfg.Stats.Bytes.Add(int64(size))
}

// finalKeys splits a handle into its keys.
func finalKeys(handle []byte) []string {
	s := strings.TrimSuffix(string(handle), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// opTimeout bounds one store call; the store retries within it.
const opTimeout = 2 * time.Minute

func (f *files) put(key string, data []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	return f.cfg.Stats.note(f.cfg.Store.Put(ctx, key, bytes.NewReader(data), int64(len(data))))
}

func (f *files) get(key string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	r, err := f.cfg.Store.Get(ctx, key)
	if errors.Is(err, objstore.ErrNotFound) {
		f.cfg.Stats.note(nil) // an answer: the store is up
		return nil, err
	}
	if err != nil {
		return nil, f.cfg.Stats.note(err)
	}
	defer r.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(r); err != nil {
		return nil, f.cfg.Stats.note(err)
	}
	return b.Bytes(), f.cfg.Stats.note(nil)
}

func (f *files) stat(key string) (objstore.ObjectInfo, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	info, err := f.cfg.Store.Stat(ctx, key)
	if errors.Is(err, objstore.ErrNotFound) {
		f.cfg.Stats.note(nil)
		return info, err
	}
	return info, f.cfg.Stats.note(err)
}

func (f *files) list(prefix string) ([]objstore.ObjectInfo, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	objs, err := f.cfg.Store.List(ctx, prefix)
	return objs, f.cfg.Stats.note(err)
}

func (f *files) delete(key string) error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	return f.cfg.Stats.note(f.cfg.Store.Delete(ctx, key))
}
