//go:build !race

// The SIGKILL runs of node processes (built without -race) check no Go
// code of this process for races; they run in make test's second pass, at
// full speed, rather than beside every -race package on a loaded machine.

package integration

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/consultest"
	"github.com/sluicehq/sluice/internal/s3test"
	"github.com/sluicehq/sluice/internal/testkinds"
)

// Exactly once without Kafka: a file source, a group-by counter and a file
// sink on 3 node processes, checkpoints in S3. Random nodes are SIGKILLed
// at random moments while the file is read (each restarted once the
// others noticed), then one is killed for good. The sink's committed parts
// must hold every count of every word once: "w7\t1" … "w7\t40" for a word
// seen 40 times, no line missing, no line twice.
func TestExactlyOnceFileToFileThroughSIGKILLs(t *testing.T) {
	const records, keys, kills = 120_000, 3000, 10
	agent := consultest.Start(t)
	s3 := s3test.Start(t)
	t.Setenv("AWS_ENDPOINT_URL_S3", s3.Endpoint())
	t.Setenv("AWS_ACCESS_KEY_ID", s3.AccessKey())
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3.SecretKey())
	t.Setenv("AWS_REGION", "us-east-1")
	io := t.TempDir()
	in, out := filepath.Join(io, "words.txt"), filepath.Join(io, "counts.txt")
	writeWords(t, in, records, keys)

	c := newCluster(t, agent.Addr(), "-file-in", in, "-file-out", out, "-rate", "2000", "-count-parallelism", "6",
		"-guarantee", "exactly-once", "-checkpoints", "s3://"+s3.Bucket()+"/files", "-checkpoint-interval", "300ms")
	ids := []string{"n1", "n2", "n3"}
	for _, id := range ids {
		c.start(id)
	}
	c.waitFor(time.Minute, "some lines counted", func() bool { return c.processed("count") >= 5_000 })
	c.killAtRandom(ids, kills, 4, 200*time.Millisecond, 1500*time.Millisecond)
	c.crash("n3") // for good
	c.waitFor(30*time.Second, "n3's crash to be noticed", func() bool {
		for _, n := range c.running() {
			if st, err := n.status(); err != nil || len(st.Members) != 2 {
				return false
			}
		}
		return true
	})
	// The instances' processed counters restart with each rollback, so
	// the committed output itself says when everything went through: all
	// lines there, and nothing more committed for 10 checkpoint intervals.
	lines, stable := 0, time.Now()
	for deadline := time.Now().Add(4 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		n := len(readParts(t, out))
		if n != lines {
			lines, stable = n, time.Now()
		}
		if lines >= records && time.Since(stable) > 3*time.Second {
			break
		}
	}
	t.Logf("%d of %d count lines committed", lines, records)
	seen, err := testkinds.CountLines(readParts(t, out))
	if err != nil {
		t.Fatal(err)
	}
	per := records / keys
	where := partsOf(t, out)
	var wrong []string
	for i := range keys {
		k := fmt.Sprintf("w%d", i)
		for n := 1; n <= per+1; n++ {
			want := 1
			if n > per {
				want = 0
			}
			if got := seen[k][n]; got != want {
				wrong = append(wrong, fmt.Sprintf("%s\t%d: %d times, want %d (in %v)", k, n, got, want, where[fmt.Sprintf("%s\t%d", k, n)]))
			}
		}
	}
	if len(wrong) > 0 {
		t.Errorf("%d count lines wrong, for example:\n%s", len(wrong), strings.Join(wrong[:min(len(wrong), 12)], "\n"))
		c.dumpLogs()
		t.FailNow()
	}
	if len(seen) != keys || lines != records {
		t.Fatalf("%d words, %d lines in the output; want %d and %d", len(seen), lines, keys, records)
	}
	t.Logf("%d lines through %d SIGKILLs and a node lost for good: %d committed count lines, 0 lost, 0 duplicated", records, kills, lines)
}

// writeWords writes records lines "w<i mod keys>".
func writeWords(t *testing.T, path string, records, keys int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for i := range records {
		fmt.Fprintf(w, "w%d\n", i%keys)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// readParts returns the lines of the committed parts of the file sink
// writing path, in name order.
func readParts(t *testing.T, path string) []string {
	t.Helper()
	lines, err := testkinds.SinkParts(path)
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

// partsOf maps each line of the committed parts of path to the parts
// holding it.
func partsOf(t *testing.T, path string) map[string][]string {
	t.Helper()
	parts, err := filepath.Glob(path + ".part-*")
	if err != nil {
		t.Fatal(err)
	}
	where := map[string][]string{}
	for _, p := range parts {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			where[l] = append(where[l], strings.TrimPrefix(filepath.Base(p), filepath.Base(path)+".part-"))
		}
	}
	return where
}
