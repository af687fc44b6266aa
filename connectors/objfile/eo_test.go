package objfile_test

import (
	"bytes"
	"context"
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/connectors/objfile"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/objstore"
)

// finalName matches the final key of a file of writer write-00000.
var finalName = regexp.MustCompile(`^write-00000-(\d{20})-\d{6}\.jsonl$`)

// checkpointsOf returns the checkpoints the final keys name, sorted.
func checkpointsOf(t *testing.T, final []string) []string {
	t.Helper()
	var out []string
	for _, k := range final {
		m := finalName.FindStringSubmatch(k)
		if m == nil {
			t.Fatalf("final key %q is not a committed file's name", k)
		}
		if !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	slices.Sort(out)
	return out
}

func TestExactlyOnceThroughCrashAndRestore(t *testing.T) {
	eachStore(t, func(t *testing.T, st objstore.Store) {
		h := newSink(t, objfile.SinkConfig{Store: st, RollRecords: 4})

		send(t, h, 0, 10, nil)
		sluicetest.Must(t, h.Checkpoint(1))
		if final, pending := objects(t, st); len(final) != 0 || len(pending) != 4 {
			t.Fatalf("after the barrier of 1: final %v, pending %v; want no final, 3 pending files and a marker", final, pending)
		}
		send(t, h, 10, 20, nil)
		sluicetest.Must(t, h.Checkpoint(2))
		sluicetest.Must(t, h.Complete(1))
		wantExactly(t, st, 0, 10)

		send(t, h, 20, 30, nil)
		sluicetest.Must(t, h.Checkpoint(3)) // never completes
		send(t, h, 30, 35, nil)             // in memory only
		// The process dies; the job restarts from checkpoint 2, which
		// completed without this node hearing of it: the restore commits
		// it, and the source replays from it.
		sluicetest.Must(t, h.Crash(2))
		wantExactly(t, st, 0, 20)
		send(t, h, 20, 35, nil)
		sluicetest.Must(t, h.Checkpoint(4))
		sluicetest.Must(t, h.Complete(4)) // and deletes checkpoint 3's orphans

		wantExactly(t, st, 0, 35)
		final, pending := objects(t, st)
		if len(pending) != 0 {
			t.Errorf("pending files left: %v", pending)
		}
		if got, want := checkpointsOf(t, final), []string{"00000000000000000001", "00000000000000000002", "00000000000000000004"}; !slices.Equal(got, want) {
			t.Errorf("final files of checkpoints %v, want %v (3 was rolled back)", got, want)
		}
	})
}

// A crash after Commit put a final file but before it deleted the pending
// one: the commit after the restore puts the same bytes again.
func TestCommitAgainAfterACrashMidCommit(t *testing.T) {
	eachStore(t, func(t *testing.T, st objstore.Store) {
		h := newSink(t, objfile.SinkConfig{Store: st})
		send(t, h, 0, 5, nil)
		sluicetest.Must(t, h.Checkpoint(1))
		_, pending := objects(t, st)
		if len(pending) != 2 || !strings.HasSuffix(pending[0], ".txn") {
			t.Fatalf("pending objects %v, want the marker and one file", pending)
		}
		pending = pending[1:]
		// Half a commit: the final object put, the pending one kept.
		r, err := st.Get(context.Background(), pending[0])
		sluicetest.Must(t, err)
		data, err := io.ReadAll(r)
		sluicetest.Must(t, err)
		sluicetest.Must(t, r.Close())
		const final = "write-00000-00000000000000000001-000000.jsonl"
		sluicetest.Must(t, st.Put(context.Background(), final, bytes.NewReader(data), int64(len(data))))

		sluicetest.Must(t, h.Crash(1)) // commits 1 again
		sluicetest.Must(t, h.Complete(1))
		wantExactly(t, st, 0, 5)
		if got, p := objects(t, st); !slices.Equal(got, []string{final}) || len(p) != 0 {
			t.Errorf("objects %v, pending %v; want only %s", got, p, final)
		}
	})
}

// Rolled files are put as pending objects before the barrier, so memory
// holds only the files being filled; a crash before the barrier leaves
// them, and the restored writer deletes them (their records come again).
func TestRolledFilesArePutEarlyAndDeletedAfterACrash(t *testing.T) {
	eachStore(t, func(t *testing.T, st objstore.Store) {
		h := newSink(t, objfile.SinkConfig{Store: st, RollRecords: 3})
		send(t, h, 0, 7, nil)
		final, pending := objects(t, st)
		if len(final) != 0 || len(pending) != 2 {
			t.Fatalf("before the barrier: final %v, pending %v; want the 2 rolled files pending", final, pending)
		}
		sluicetest.Must(t, h.Crash(0))
		if final, pending := objects(t, st); len(final) != 0 || len(pending) != 0 {
			t.Fatalf("after the restart: final %v, pending %v; want nothing", final, pending)
		}
		send(t, h, 0, 7, nil)
		sluicetest.Must(t, h.Checkpoint(1))
		sluicetest.Must(t, h.Complete(1))
		wantExactly(t, st, 0, 7)
		if _, pending := objects(t, st); len(pending) != 0 {
			t.Errorf("pending objects left: %v", pending)
		}
	})
}
