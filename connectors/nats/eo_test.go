package nats_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	sn "github.com/sluicehq/sluice/connectors/nats"
	"github.com/sluicehq/sluice/internal/natstest"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
)

// counter counts records per key (group-by) and produces "<count>" for
// each, keyed by the key; it panics once, at the record whose global
// index (over all attempts) is panicAt.
type counter struct {
	seen    *atomic.Int64
	panicAt int64
}

func (c counter) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: "count", Inputs: []sdk.Input{{Stream: "words", Routing: sdk.GroupBy}}, Outputs: []string{"counts"}}
}
func (c counter) Init(sdk.Context) error { return nil }
func (c counter) ProcessRecord(ctx sdk.Context, rec sdk.Record) error {
	if c.seen.Add(1) == c.panicAt {
		panic("injected failure")
	}
	n, err := sdk.GetInt64(ctx.State(), rec.Key)
	if err != nil {
		return err
	}
	n++
	sdk.PutInt64(ctx.State(), rec.Key, n)
	return ctx.Produce("counts", sdk.Record{Key: rec.Key, Value: []byte(strconv.FormatInt(n, 10))})
}
func (c counter) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

// pipeline is NATS "in" → count per key → NATS "out" on the embedded
// runtime, exactly-once.
type pipeline struct {
	t         *testing.T
	srv       *natstest.Server // nil in a crash test's child
	url       string
	js        jetstream.JetStream
	dir       string
	seen      atomic.Int64
	panicAt   int64
	srcStats  sn.Stats
	sinkStats sn.Stats
	rt        *node.Runtime
}

const eoKeys = 7

func newPipeline(t *testing.T, panicAt int64) *pipeline {
	p := &pipeline{t: t, dir: t.TempDir(), panicAt: panicAt}
	p.srv = natstest.Start(t, natstest.Options{})
	p.srv.CreateStream(t, jetstream.StreamConfig{Name: "in", Subjects: []string{"in.>"}, Storage: jetstream.FileStorage})
	p.srv.CreateStream(t, jetstream.StreamConfig{Name: "out", Subjects: []string{"out.>"}, Duplicates: 10 * time.Minute, Storage: jetstream.FileStorage})
	p.js, p.url = jsOf(t, p.srv), p.srv.URL()
	return p
}

// publishWords publishes records from..to-1, record i with key k<i mod eoKeys>.
func (p *pipeline) publishWords(from, to int) {
	publish(p.t, p.js, from, to, func(i int) string { return "in.k" + itoa(i%eoKeys) })
}

func (p *pipeline) start() {
	t := p.t
	t.Helper()
	conn := sn.Connection{URL: p.url, ReconnectWait: 100 * time.Millisecond}
	src := sourceFactory(t, sn.SourceConfig{Name: "src", Output: "words", Connection: conn, Stream: "in", Stats: &p.srcStats,
		KeyGroups: 16})
	sink := sinkFactory(t, sn.SinkConfig{Name: "sink", Inputs: []sdk.Input{{Stream: "counts"}}, Connection: conn,
		Subject: "out", SubjectFromKey: true, Stream: "out", Stats: &p.sinkStats})
	count := func() sdk.Operator { return counter{seen: &p.seen, panicAt: p.panicAt} }
	rt, err := node.Start(context.Background(), node.Config{
		NodeConfig: node.NodeConfig{DataDir: filepath.Join(p.dir, "data"), NoSync: true, Logger: sluicetest.Logger(t)},
		Guarantee:  sdk.ExactlyOnce, CheckpointInterval: 100 * time.Millisecond, KeepRunning: true,
	}, src, count, sink)
	if err != nil {
		t.Fatalf("start the runtime: %v", err)
	}
	p.rt = rt
	t.Cleanup(func() { p.stop() })
}

func (p *pipeline) stop() {
	if p.rt == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.rt.Stop(ctx); err != nil {
		p.t.Errorf("stop the runtime: %v", err)
	}
	p.rt = nil
}

// waitOut waits until the output stream holds at least n messages.
func (p *pipeline) waitOut(n int, within time.Duration) {
	p.t.Helper()
	sluicetest.WaitEvery(p.t, within, 20*time.Millisecond, fmt.Sprintf("%d counts in the output stream", n), func() bool {
		return streamMsgs(p.t, p.js, "out") >= uint64(n)
	})
}

// checkExactlyOnce reads the output: every key's counts must be 1, 2, …
// its number of records, each once (a loss is a gap, a duplicate a
// repeated count), n in all.
func (p *pipeline) checkExactlyOnce(n int) {
	t := p.t
	t.Helper()
	msgs := readStream(t, p.js, "out")
	next := map[string]int{}
	for i, m := range msgs {
		key := strings.TrimPrefix(m.Subject(), "out.")
		next[key]++
		if got := string(m.Data()); got != itoa(next[key]) {
			t.Fatalf("output message %d: %s count %s, want %d (counts so far %v)", i, key, got, next[key], next)
		}
	}
	if len(msgs) != n {
		t.Fatalf("%d counts in the output, want %d: one per input record", len(msgs), n)
	}
	for k := range eoKeys {
		key := "in.k" + itoa(k) // the source's key: the input subject
		if want := n/eoKeys + btoi(k < n%eoKeys); next[key] != want {
			t.Fatalf("key %s counted %d, want %d", key, next[key], want)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestExactlyOnceCountPerKeyThroughAFailureAndARestart(t *testing.T) {
	const n = 3000
	p := newPipeline(t, 700)
	p.publishWords(0, 1500)
	p.start()
	p.waitOut(1000, 60*time.Second)
	if p.seen.Load() < 700 {
		t.Fatalf("the counter saw %d records, want the injected failure at 700 behind", p.seen.Load())
	}
	p.publishWords(1500, 2000)
	p.stop() // the runtime restarts mid-stream
	p.publishWords(2000, 2500)
	p.start()
	p.publishWords(2500, n)
	p.waitOut(n, 60*time.Second)
	p.stop()
	p.checkExactlyOnce(n)
	if restarts := p.seen.Load() - n; restarts < 1 {
		t.Fatalf("the counter processed %d records, want more than %d (the failed attempt's retry)", p.seen.Load(), n)
	}
}

// TestExactlyOnceThroughANATSOutage stops nats-server for 10 s
// mid-stream, then starts it again on the same port and store: the
// outage shows in the source's status and Stats while it lasts, and the
// output counts every record once.
func TestExactlyOnceThroughANATSOutage(t *testing.T) {
	const n = 2000
	const outage = 10 * time.Second
	p := newPipeline(t, 0)
	p.publishWords(0, 1000)
	p.start()
	p.waitOut(1000, 60*time.Second)

	before := p.srcStatus().TransientErrors
	p.srv.Stop()
	stopped := time.Now()
	seen := false
	for time.Since(stopped) < outage { // the outage lasts 10 s of wall time; it must show in status meanwhile
		st := p.srcStatus()
		if st.TransientErrors > before && strings.Contains(st.LastError, "servers unavailable") && p.srcStats.Down() > 0 {
			if !seen {
				t.Logf("outage in status after %v: %s", time.Since(stopped).Round(time.Millisecond), st.LastError)
			}
			seen = true
		}
		time.Sleep(50 * time.Millisecond) // polling the status at a human cadence, not synchronising
	}
	if !seen {
		st := p.srcStatus()
		t.Fatalf("the outage never showed in the source's status within %v: transient errors %d (before %d), last error %q, stats down %d",
			outage, st.TransientErrors, before, st.LastError, p.srcStats.Down())
	}
	p.srv.Start()
	p.publishWords(1000, n)
	p.waitOut(n, 90*time.Second)
	if p.srcStats.Down() != 0 || p.srcStats.Outages() < 1 {
		t.Fatalf("after the outage stats say %d down, %d outages; want 0 and at least 1", p.srcStats.Down(), p.srcStats.Outages())
	}
	p.stop()
	p.checkExactlyOnce(n)
}

// srcStatus returns the status of the source's instance.
func (p *pipeline) srcStatus() node.InstanceStatus {
	p.t.Helper()
	for _, op := range p.rt.Status() {
		if op.Name == "src" && len(op.Instances) > 0 {
			return op.Instances[0]
		}
	}
	p.t.Fatal("no status of the source's instance")
	return node.InstanceStatus{}
}

// TestExactlyOnceThroughACrash runs the pipeline in a child process that
// exits abruptly (no stop, no final commit) mid-stream, with checkpoints
// completing and their commits publishing; the runtime started again on
// the same data directory restores the newest checkpoint, whose commit
// publishes again (the server drops the duplicates), and the source
// replays what followed it: every record counted once.
func TestExactlyOnceThroughACrash(t *testing.T) {
	const n, crashAt = 4000, 1500
	if dir, ok := sluicetest.ChildDir(); ok {
		url, err := os.ReadFile(filepath.Join(dir, "url"))
		if err != nil {
			t.Fatal(err)
		}
		nc, err := natsgo.Connect(string(url))
		if err != nil {
			t.Fatal(err)
		}
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		p := &pipeline{t: t, dir: dir, url: string(url), js: js}
		p.start()
		p.waitOut(crashAt, 60*time.Second)
		os.Exit(3) // the crash: nothing stops, nothing commits
	}
	p := newPipeline(t, 0)
	if err := os.WriteFile(filepath.Join(p.dir, "url"), []byte(p.url), 0o600); err != nil {
		t.Fatal(err)
	}
	p.publishWords(0, n/2)
	out, err := sluicetest.InChild(t, p.dir, 90*time.Second)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Fatalf("the child did not crash as planned: %v\n%s", err, out)
	}
	before := streamMsgs(t, p.js, "out")
	t.Logf("crashed with %d counts published", before)
	p.publishWords(n/2, n)
	p.start()
	p.waitOut(n, 60*time.Second)
	p.stop()
	p.checkExactlyOnce(n)
	t.Logf("after the restart: %d publishes acknowledged as duplicates", p.sinkStats.Duplicates())
}
