package kafkawordcount_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/connectors/kafka"
	"github.com/sluicehq/sluice/internal/consultest"
	"github.com/sluicehq/sluice/internal/kafkatest"
	"github.com/sluicehq/sluice/internal/proctest"
	"github.com/sluicehq/sluice/internal/sluicetest"
	kafkawordcount "github.com/sluicehq/sluice/samples/kafka-wordcount"
)

// The multi-process tests run node processes of cmd/kafka-wordcount joined
// through a real Consul agent, with kfake (in this process) as the broker.
// The node binary is built without -race even when the tests run under
// it: a race build of three nodes is too slow on two cores for the
// suite's time budget, and the connectors' own tests run in-process under
// -race.

// nodeBinary is cmd/kafka-wordcount, built by TestMain.
var nodeBinary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kafka-wordcount-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	nodeBinary, err = proctest.Build(dir, "github.com/sluicehq/sluice/samples/kafka-wordcount/cmd/kafka-wordcount", false)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Instances of the pipeline: kafka-source 3, count 6, kafka-sink 3, kafka-dlq 1.
const pipelineInstances = 3 + 6 + 3 + 1

// topics names one run's topics, group and cluster.
type topics struct {
	in, out, dlq, group, cluster, state string
}

func newTopics(t *testing.T, b *kafkatest.Broker, name string) topics {
	t.Helper()
	tp := topics{in: name + ".words", out: name + ".counts", dlq: name + ".dlq", group: name, cluster: "sluice-" + name, state: name}
	ctx := context.Background()
	for topic, parts := range map[string]int32{tp.in: 12, tp.out: 12, tp.dlq: 1} {
		if err := b.CreateTopic(ctx, topic, parts, nil); err != nil {
			t.Fatal(err)
		}
	}
	return tp
}

// nodeArgs are the flags of every node of an at-least-once run.
func (tp topics) nodeArgs(b *kafkatest.Broker, consul string) []string {
	return []string{"-consul", consul, "-node-insecure", "-cluster", tp.cluster, "-brokers", strings.Join(b.Addrs(), ","), "-guarantee", "at-least-once",
		"-input", tp.in, "-output", tp.out, "-dlq", tp.dlq, "-group", tp.group, "-state-prefix", tp.state, "-log-level", "info"}
}

// tally follows the output and dead-letter topics: the largest count seen
// per word, the number of count records, and the poison records
// dead-lettered (by "partition/offset").
type tally struct {
	mu      sync.Mutex
	max     map[string]int64
	records int64
	dead    map[string]int
	bad     []string
}

func follow(t *testing.T, b *kafkatest.Broker, tp topics) *tally {
	return followWith(t, b, tp, kafkatest.NewTail)
}

// followWith is follow reading the topics with newTail.
func followWith(t *testing.T, b *kafkatest.Broker, tp topics, newTail func([]string, func(*kgo.Record), ...string) (*kafkatest.Tail, error)) *tally {
	t.Helper()
	tl := &tally{max: map[string]int64{}, dead: map[string]int{}}
	out, err := newTail(b.Addrs(), func(r *kgo.Record) {
		n, err := kafkawordcount.ParseCount(r.Value)
		tl.mu.Lock()
		defer tl.mu.Unlock()
		if err != nil {
			tl.bad = append(tl.bad, fmt.Sprintf("count %q of %q", r.Value, r.Key))
			return
		}
		tl.records++
		tl.max[string(r.Key)] = max(tl.max[string(r.Key)], n)
	}, tp.out)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(out.Close)
	dlq, err := newTail(b.Addrs(), func(r *kgo.Record) {
		tl.mu.Lock()
		defer tl.mu.Unlock()
		var part, off, topic string
		for _, h := range r.Headers {
			switch h.Key {
			case kafka.HeaderPartition:
				part = string(h.Value)
			case kafka.HeaderOffset:
				off = string(h.Value)
			case kafka.HeaderTopic:
				topic = string(h.Value)
			}
		}
		if topic != tp.in || !strings.HasPrefix(string(r.Value), "not a word") {
			tl.bad = append(tl.bad, fmt.Sprintf("dead letter %q from topic %q", r.Value, topic))
			return
		}
		tl.dead[part+"/"+off]++
	}, tp.dlq)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dlq.Close)
	return tl
}

// shortfall returns the words whose largest count is below the expected
// one (at most 5, described), their number, and the duplicates: the sum
// over words of the largest count minus the expected one.
func (tl *tally) shortfall(want map[string]int64) (missing []string, short int, dups int64) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	for w, n := range want {
		got := tl.max[w]
		if got < n {
			short++
			if len(missing) < 5 {
				missing = append(missing, fmt.Sprintf("%s: %d < %d", w, got, n))
			}
		} else {
			dups += got - n
		}
	}
	return missing, short, dups
}

func (tl *tally) deadLetters() (distinct, total int) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	for _, n := range tl.dead {
		total += n
	}
	return len(tl.dead), total
}

func (tl *tally) counted() int64 {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return tl.records
}

func (tl *tally) problems() []string {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return slices.Clone(tl.bad)
}

// waitStable waits until every node sees the others and the cluster runs
// every instance of the pipeline once, with no handoff pending.
func waitStable(t *testing.T, nodes *kafkatest.Nodes, members int) {
	t.Helper()
	sluicetest.WaitEvery(t, 90*time.Second, 50*time.Millisecond, "the cluster to settle", func() bool {
		running := 0
		for _, n := range nodes.Running() {
			st, err := n.Status()
			if err != nil || len(st.Members) != members || len(st.Pending) > 0 {
				return false
			}
			for _, op := range st.Operators {
				for _, in := range op.Instances {
					if in.State == "running" {
						running++
					}
				}
			}
		}
		return running == pipelineInstances
	})
}

// producer runs "kafka-wordcount produce" for load records [0, Records).
type producer struct {
	cmd  *exec.Cmd
	done chan error
	out  strings.Builder
}

func startProducer(t *testing.T, b *kafkatest.Broker, topic string, load kafkawordcount.Load, rate float64) *producer {
	t.Helper()
	p := &producer{done: make(chan error, 1)}
	p.cmd = exec.Command(nodeBinary, "produce", "-brokers", strings.Join(b.Addrs(), ","), "-topic", topic,
		"-n", strconv.FormatInt(load.Records, 10), "-vocabulary", strconv.Itoa(load.Vocabulary),
		"-poison-every", strconv.FormatInt(load.PoisonEvery, 10), "-rate", strconv.FormatFloat(rate, 'f', 0, 64))
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
		p.done <- nil
	})
	return p
}

func (p *producer) wait(t *testing.T, timeout time.Duration) {
	t.Helper()
	select {
	case err := <-p.done:
		p.done <- err
		if err != nil {
			t.Fatalf("producer: %v\n%s", err, p.out.String())
		}
	case <-time.After(timeout):
		t.Fatalf("producer not done after %v\n%s", timeout, p.out.String())
	}
}

// waitCounted waits until every word's largest count reaches its expected
// count and every poison record is in the dead-letter topic; it returns
// the duplicates.
func waitCounted(t *testing.T, nodes *kafkatest.Nodes, tl *tally, want map[string]int64, poison int64, timeout time.Duration) int64 {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		missing, short, dups := tl.shortfall(want)
		dead, _ := tl.deadLetters()
		if short == 0 && int64(dead) >= poison {
			return dups
		}
		if time.Now().After(deadline) {
			nodes.DumpLogs()
			t.Fatalf("after %v: %d of %d words short of their count (e.g. %v); %d of %d poison records dead-lettered: records were lost",
				timeout, short, len(want), missing, dead, poison)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestWordCountIsExactOnThreeNodes(t *testing.T) {
	b := kafkatest.StartBroker(t, kafkatest.BrokerConfig{})
	agent := consultest.Start(t)
	tp := newTopics(t, b, "exact")
	tl := follow(t, b, tp)
	load := kafkawordcount.Load{Records: 1_000_000, Vocabulary: 5000, PoisonEvery: 50_000}
	want, poison := load.Counts()

	nodes := kafkatest.NewNodes(t, nodeBinary, tp.nodeArgs(b, agent.Addr())...)
	for _, id := range []string{"n1", "n2", "n3"} {
		nodes.Start(id)
	}
	waitStable(t, nodes, 3)
	start := time.Now()
	p := startProducer(t, b, tp.in, load, 0)
	p.wait(t, 2*time.Minute)
	dups := waitCounted(t, nodes, tl, want, poison, 3*time.Minute)
	elapsed := time.Since(start)
	// Nothing failed, so nothing may be counted twice either.
	if got, wantN := tl.counted(), load.Records-poison; dups != 0 || got != wantN {
		t.Errorf("%d count records for %d words, %d duplicates: want exactly one count per word and none", got, wantN, dups)
	}
	if dead, total := tl.deadLetters(); int64(dead) != poison || int64(total) != poison {
		t.Errorf("%d dead letters (%d distinct) for %d poison records, want exactly one each", total, dead, poison)
	}
	if bad := tl.problems(); len(bad) > 0 {
		t.Errorf("unexpected output: %v", bad)
	}
	t.Logf("%d records (%d not words) through 3 nodes in %v (%.0f records/s from the first write to the last count), counts exact",
		load.Records, poison, elapsed.Round(time.Millisecond), float64(load.Records)/elapsed.Seconds())
}

// Crash runs: each SIGKILLs a random node at a random moment killsPerRun
// times while words stream in, restarting it once the others have noticed
// (a node restarted under the same id before that would not be seen to
// have crashed). 4 runs × 5 kills = 20 kills.
const (
	crashRuns   = 4
	killsPerRun = 5
	rate        = 10_000 // records/s written during a crash run
)

func TestCrashedNodesLoseNoWord(t *testing.T) {
	b := kafkatest.StartBroker(t, kafkatest.BrokerConfig{})
	agent := consultest.Start(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	var totalKills int
	var totalDups, totalRecords int64
	for run := 1; run <= crashRuns; run++ {
		t.Run(fmt.Sprintf("run%d", run), func(t *testing.T) {
			tp := newTopics(t, b, fmt.Sprintf("crash%d", run))
			tl := follow(t, b, tp)
			load := kafkawordcount.Load{Records: 200_000, Vocabulary: 5000, PoisonEvery: 20_000}
			want, poison := load.Counts()
			nodes := kafkatest.NewNodes(t, nodeBinary, tp.nodeArgs(b, agent.Addr())...)
			ids := []string{"n1", "n2", "n3"}
			for _, id := range ids {
				nodes.Start(id)
			}
			waitStable(t, nodes, 3)
			p := startProducer(t, b, tp.in, load, rate) // 20 s of input
			for k := 1; k <= killsPerRun; k++ {
				time.Sleep(time.Duration(200+rng.IntN(1300)) * time.Millisecond) // the random moment
				victim := ids[rng.IntN(len(ids))]
				counted := tl.counted()
				nodes.Kill(victim)
				killed := time.Now()
				sluicetest.WaitEvery(t, 20*time.Second, 50*time.Millisecond, victim+"'s crash to be noticed", func() bool {
					for _, n := range nodes.Running() {
						st, err := n.Status()
						if err != nil {
							return false
						}
						for _, m := range st.Members {
							if m.ID == victim {
								return false
							}
						}
					}
					return true
				})
				noticed := time.Since(killed)
				nodes.Start(victim)
				// Every node must see it again before the next kill, or a
				// second crash of it could go unnoticed.
				sluicetest.WaitEvery(t, 30*time.Second, 50*time.Millisecond, victim+" to rejoin", func() bool {
					for _, n := range nodes.Running() {
						if st, err := n.Status(); err != nil || len(st.Members) != len(ids) {
							return false
						}
					}
					return true
				})
				t.Logf("kill %d: %s at %d counts; noticed after %v; restarted", k, victim, counted, noticed.Round(time.Millisecond))
			}
			totalKills += killsPerRun
			p.wait(t, 2*time.Minute)
			dups := waitCounted(t, nodes, tl, want, poison, 2*time.Minute)
			if bad := tl.problems(); len(bad) > 0 {
				t.Errorf("unexpected output: %v", bad)
			}
			_, deadTotal := tl.deadLetters()
			totalDups += dups
			totalRecords += load.Records
			t.Logf("run %d: %d kills, %d records, every word counted; duplicates %d (%.2f%% of the input; %d per kill, %.2f s of input), dead letters %d for %d poison records",
				run, killsPerRun, load.Records, dups, 100*float64(dups)/float64(load.Records), dups/killsPerRun, float64(dups)/killsPerRun/rate, deadTotal, poison)
			for _, id := range ids {
				nodes.Kill(id) // free the CPU for the next run
			}
		})
		if t.Failed() {
			break
		}
	}
	perKill := float64(totalDups) / float64(max(totalKills, 1))
	t.Logf("%d SIGKILLs over %d runs: no record lost; %d duplicates for %d records (%.2f%%), %.0f per kill (%.2f s of input; "+
		"bound: what the sources read since their durable positions, at most about kafka.DefaultMaxUndurable = %v of reading each)",
		totalKills, crashRuns, totalDups, totalRecords, 100*float64(totalDups)/float64(totalRecords), perKill, perKill/rate, kafka.DefaultMaxUndurable)
	// A regression guard, far above the bound (≈ 1 s of input per kill)
	// so as not to depend on timing: when durability stopped advancing
	// after the first crash, every kill replayed everything read since,
	// ≈ 13 s of input per kill.
	if limit := 4 * rate * float64(totalKills); float64(totalDups) > limit {
		t.Errorf("%d duplicates for %d kills, more than %.0f (4 s of input per kill): crashes replay far more than what was in flight",
			totalDups, totalKills, limit)
	}
}

func TestBrokerRestartLosesNothing(t *testing.T) {
	b := kafkatest.StartBroker(t, kafkatest.BrokerConfig{})
	agent := consultest.Start(t)
	tp := newTopics(t, b, "outage")
	tl := follow(t, b, tp)
	load := kafkawordcount.Load{Records: 150_000, Vocabulary: 5000, PoisonEvery: 15_000}
	want, poison := load.Counts()
	nodes := kafkatest.NewNodes(t, nodeBinary, tp.nodeArgs(b, agent.Addr())...)
	for _, id := range []string{"n1", "n2", "n3"} {
		nodes.Start(id)
	}
	waitStable(t, nodes, 3)
	p := startProducer(t, b, tp.in, load, 15_000) // 10 s of input
	sluicetest.WaitEvery(t, time.Minute, 50*time.Millisecond, "20k words counted", func() bool { return tl.counted() >= 20_000 })

	b.Stop()
	stopped := time.Now()
	// The outage shows in the status of the connectors' instances: in
	// each node's own status and in the cluster view.
	var seen []string
	sluicetest.WaitEvery(t, 30*time.Second, 50*time.Millisecond, "the outage in /v1/node and /v1/status", func() bool {
		seen = seen[:0]
		inStatus := false
		for _, n := range nodes.Running() {
			st, err := n.Status()
			if err != nil {
				return false
			}
			for _, op := range st.Operators {
				for _, in := range op.Instances {
					if strings.Contains(in.LastError, kafka.ErrUnavailable.Error()) {
						seen = append(seen, fmt.Sprintf("%s %s/%d: %s", n.ID, op.Name, in.Index, in.LastError))
					}
				}
			}
			cs, err := n.ClusterStatus()
			if err != nil {
				return false
			}
			for _, op := range cs.Operators {
				for _, in := range op.Placement {
					if strings.Contains(in.LastError, kafka.ErrUnavailable.Error()) {
						inStatus = true
					}
				}
			}
		}
		return inStatus && slices.ContainsFunc(seen, func(s string) bool { return strings.Contains(s, kafkawordcount.SourceName) }) &&
			slices.ContainsFunc(seen, func(s string) bool { return strings.Contains(s, kafkawordcount.SinkName) })
	})
	t.Logf("broker down; reported within %v, e.g. %s", time.Since(stopped).Round(time.Millisecond), seen[0])
	// And in the metrics: the connectors' transient failures.
	var metric string
	sluicetest.WaitEvery(t, 30*time.Second, 50*time.Millisecond, "the outage in /metrics", func() bool {
		for _, n := range nodes.Running() {
			body, err := n.Metrics()
			if err != nil {
				return false
			}
			for _, line := range strings.Split(body, "\n") {
				if strings.HasPrefix(line, "sluice_operator_transient_errors_total{") &&
					strings.Contains(line, `sluice_operator_name="`+kafkawordcount.SourceName+`"`) && !strings.HasSuffix(line, " 0") {
					metric = n.ID + ": " + line
					return true
				}
			}
		}
		return false
	})
	t.Logf("and in the metrics, e.g. %s", metric)
	for time.Since(stopped) < 5*time.Second {
		time.Sleep(100 * time.Millisecond) // the outage lasts 5 s by design
	}
	if err := b.Restart(); err != nil {
		t.Fatal(err)
	}
	t.Logf("broker restarted after %v", time.Since(stopped).Round(time.Millisecond))
	p.wait(t, 2*time.Minute)
	dups := waitCounted(t, nodes, tl, want, poison, 2*time.Minute)
	if bad := tl.problems(); len(bad) > 0 {
		t.Errorf("unexpected output: %v", bad)
	}
	t.Logf("%d records across a 5 s broker outage: every word counted; duplicates %d", load.Records, dups)
}
