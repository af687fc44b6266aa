package objfile

import (
	"bytes"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/connect"
)

// Keys, under SinkConfig.Prefix (checkpoint with 20 digits, n with 6,
// txn "t" and 20 digits, the time its transaction began):
//
//	<PendingPrefix><writer>/<txn>-<n>             file n of a transaction, put once it rolls or at PreCommit
//	<PendingPrefix><writer>/<checkpoint>.txn      the handle of the transaction prepared for checkpoint, put last at PreCommit
//	<partition><writer>-<checkpoint>-<n>.jsonl    file n, put at Commit
//	<partition><writer>-f<unix ns>-<n>.jsonl      a file of a Flush (not exactly-once)
//
// writer is connect.WriterName. A handle is the transaction's txn on its
// first line, then the final keys of its files, file n on line n+1.

// file is one rolling file being filled: its partition and bytes (the
// lines, or a Parquet file whose writer pq fills buf).
type file struct {
	partition string
	buf       bytes.Buffer
	records   int
	size      int          // bytes taken in (for RollBytes)
	pq        *parquetFile // FormatParquet: nil once closed
}

// finish completes fl's bytes: a Parquet file's last row group and footer.
func (fl *file) finish() error {
	if fl.pq == nil {
		return nil
	}
	if err := fl.pq.close(); err != nil {
		return err
	}
	fl.pq = nil
	return nil
}

// files is the connect.Transactions (and connect.Recoverer) of one sink
// instance. Under exactly-once a file is put as a pending object as soon
// as it rolls, so memory holds at most the files being filled; otherwise
// files wait for Flush. Its methods run on the instance's goroutine.
type files struct {
	cfg    SinkConfig
	schema *rowSchema // FormatParquet
	writer string
	eo     bool
	log    *slog.Logger

	txn    string           // the open transaction's name
	open   map[string]*file // by partition: the file each partition fills
	sealed []*file          // rolled (and, at PreCommit, the open ones), in order
	put    int              // how many of sealed are put (exactly-once)
}

var (
	_ connect.Transactions = (*files)(nil)
	_ connect.Recoverer    = (*files)(nil)
)

func (f *files) pendingDir(writer string) string {
	return f.cfg.Prefix + f.cfg.PendingPrefix + writer + "/"
}

func (f *files) pendingKey(writer, txn string, n int) string {
	return fmt.Sprintf("%s%s-%06d", f.pendingDir(writer), txn, n)
}

func (f *files) markerKey(writer string, checkpoint uint64) string {
	return fmt.Sprintf("%s%020d.txn", f.pendingDir(writer), checkpoint)
}

// Begin implements connect.Transactions: it names the transaction by the
// time (a restarted writer's names do not meet its predecessor's).
func (f *files) Begin(sdk.Context) error {
	f.txn = fmt.Sprintf("t%020d", time.Now().UnixNano())
	f.open, f.sealed, f.put = map[string]*file{}, nil, 0
	return nil
}

// Write implements connect.Transactions: it appends rec's value and '\n'
// (or, for Parquet, its row) to the file of its partition, rolling it at
// RollBytes or RollRecords. A value that is not a row of the Parquet
// columns is refused (sdk.ErrBadRecord) before anything is written. Under
// exactly-once a rolled file is put at once as a pending object; if that
// fails it is kept and tried again at the next roll or PreCommit (the
// store's outage is the barrier's problem).
func (f *files) Write(_ sdk.Context, rec sdk.Record) error {
	var row parquet.Row
	if f.schema != nil {
		var err error
		if row, err = f.schema.row(rec.Value); err != nil {
			return err
		}
	}
	if f.open == nil {
		f.open = map[string]*file{}
	}
	p := partition(f.cfg, rec)
	cur := f.open[p]
	if cur == nil {
		cur = &file{partition: p}
		if f.schema != nil {
			cur.pq = newParquetFile(f.schema, &cur.buf)
		}
		f.open[p] = cur
	}
	if cur.pq != nil {
		if err := cur.pq.write(row); err != nil {
			return err
		}
	} else {
		cur.buf.Write(rec.Value)
		cur.buf.WriteByte('\n')
	}
	cur.records++
	cur.size += len(rec.Value) + 1
	if cur.size >= f.cfg.RollBytes || cur.records >= f.cfg.RollRecords {
		if err := cur.finish(); err != nil {
			return err
		}
		f.sealed = append(f.sealed, cur)
		delete(f.open, p)
		if f.eo {
			if err := f.upload(); err != nil {
				f.log.Warn("object file sink: could not put a rolled file; trying again at the next roll or barrier", "error", err)
			}
		}
	}
	return nil
}

// seal closes the open files, in partition order, and returns every file
// of the transaction.
func (f *files) seal() ([]*file, error) {
	parts := make([]string, 0, len(f.open))
	for p := range f.open {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	for _, p := range parts {
		if err := f.open[p].finish(); err != nil {
			return nil, err
		}
		f.sealed = append(f.sealed, f.open[p])
		delete(f.open, p)
	}
	return f.sealed, nil
}

// upload puts the sealed files not put yet as pending objects, dropping
// their bytes from memory.
func (f *files) upload() error {
	for ; f.put < len(f.sealed); f.put++ {
		fl := f.sealed[f.put]
		key := f.pendingKey(f.writer, f.txn, f.put)
		if err := f.putBytes(key, fl.buf.Bytes()); err != nil {
			return fmt.Errorf("put the pending file %s: %w", key, err)
		}
		f.cfg.Stats.PendingFiles.Add(1)
		fl.buf = bytes.Buffer{}
	}
	return nil
}

// Flush is what the sink does per Flush under the guarantees other than
// exactly-once: it puts the open transaction's files under final keys
// named by the time.
func (f *files) Flush(sdk.Context) error {
	files, err := f.seal()
	if err != nil {
		return err
	}
	stamp := time.Now().UnixNano()
	for n, fl := range files {
		key := fmt.Sprintf("%s%s%s-f%020d-%06d%s", f.cfg.Prefix, fl.partition, f.writer, stamp, n, f.cfg.Format.ext())
		if err := f.putBytes(key, fl.buf.Bytes()); err != nil {
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

// parseHandle splits a handle into its transaction and final keys.
func parseHandle(handle []byte) (txn string, finals []string) {
	lines := strings.Split(strings.TrimSuffix(string(handle), "\n"), "\n")
	return lines[0], lines[1:]
}
