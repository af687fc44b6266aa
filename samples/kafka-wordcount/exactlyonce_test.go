//go:build !race

// The SIGKILL runs of node processes (built without -race) check no Go
// code of this process for races; they run in make test's second pass, at
// full speed, rather than beside every -race package on a loaded machine.

package kafkawordcount_test

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/consultest"
	"github.com/sluicehq/sluice/internal/kafkatest"
	"github.com/sluicehq/sluice/internal/s3test"
	"github.com/sluicehq/sluice/internal/sluicetest"
	kafkawordcount "github.com/sluicehq/sluice/samples/kafka-wordcount"
)

// eoArgs are the flags of every node of an exactly-once run: checkpoints in
// the S3 server (credentials and endpoint in the environment, as users
// give them).
func (tp topics) eoArgs(b *kafkatest.Broker, consul string, s3 *s3test.Server) []string {
	return []string{"-consul", consul, "-node-insecure", "-cluster", tp.cluster, "-brokers", strings.Join(b.Addrs(), ","), "-guarantee", "exactly-once",
		"-checkpoints", "s3://" + s3.Bucket() + "/" + tp.cluster, "-checkpoint-interval", "500ms",
		"-input", tp.in, "-output", tp.out, "-dlq", tp.dlq, "-group", tp.group, "-log-level", "info"}
}

// useS3 points the node processes at the S3 server.
func useS3(t *testing.T, s3 *s3test.Server) {
	t.Setenv("AWS_ENDPOINT_URL_S3", s3.Endpoint())
	t.Setenv("AWS_ACCESS_KEY_ID", s3.AccessKey())
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3.SecretKey())
	t.Setenv("AWS_REGION", "us-east-1")
}

// noticed waits until every running node no longer lists id.
func noticed(t *testing.T, nodes *kafkatest.Nodes, id string) {
	t.Helper()
	sluicetest.WaitEvery(t, 30*time.Second, 50*time.Millisecond, id+"'s crash to be noticed", func() bool {
		for _, n := range nodes.Running() {
			st, err := n.Status()
			if err != nil {
				return false
			}
			for _, m := range st.Members {
				if m.ID == id {
					return false
				}
			}
		}
		return true
	})
}

// Exactly once from topic to topic: 3 nodes count words read from Kafka
// and write the counts to Kafka in transactions, with checkpoints in S3,
// while random nodes are SIGKILLed at random moments 20 times (each
// restarted once the others noticed), and then one is killed for good. A
// read_committed consumer of the output must see every word's count rise
// by one per occurrence: nothing lost, nothing twice.
func TestExactlyOnceThroughSIGKILLs(t *testing.T) {
	const kills = 20
	b := kafkatest.StartBroker(t, kafkatest.BrokerConfig{})
	agent := consultest.Start(t)
	s3 := s3test.Start(t)
	useS3(t, s3)
	tp := newTopics(t, b, "eo")
	tl := followWith(t, b, tp, kafkatest.NewCommittedTail)
	load := kafkawordcount.Load{Records: 250_000, Vocabulary: 5000, PoisonEvery: 25_000}
	want, poison := load.Counts()

	nodes := kafkatest.NewNodes(t, nodeBinary, tp.eoArgs(b, agent.Addr(), s3)...)
	ids := []string{"n1", "n2", "n3"}
	for _, id := range ids {
		nodes.Start(id)
	}
	waitStable(t, nodes, 3)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	p := startProducer(t, b, tp.in, load, 5_000) // 50 s of input
	for k := 1; k <= kills; k++ {
		time.Sleep(time.Duration(200+rng.IntN(1300)) * time.Millisecond) // the random moment, not synchronisation
		victim := ids[rng.IntN(len(ids))]
		counted := tl.counted()
		nodes.Kill(victim)
		killed := time.Now()
		noticed(t, nodes, victim)
		took := time.Since(killed)
		nodes.Start(victim)
		sluicetest.WaitEvery(t, 60*time.Second, 50*time.Millisecond, victim+" to rejoin", func() bool {
			for _, n := range nodes.Running() {
				if st, err := n.Status(); err != nil || len(st.Members) != len(ids) {
					return false
				}
			}
			return true
		})
		t.Logf("kill %d: %s at %d committed counts; noticed after %v; restarted", k, victim, counted, took.Round(time.Millisecond))
	}
	// One node killed for good: the other two go on from the checkpoints.
	nodes.Kill("n3")
	noticed(t, nodes, "n3")
	p.wait(t, 3*time.Minute)
	waitCounted(t, nodes, tl, want, poison, 4*time.Minute)
	// Give late duplicates a chance to show: a few more checkpoints'
	// worth of committed output, then count.
	settle := tl.counted()
	sluicetest.WaitEvery(t, time.Minute, 500*time.Millisecond, "the output to stay still", func() bool {
		now := tl.counted()
		if now != settle {
			settle = now
			return false
		}
		return true
	})
	missing, short, dups := tl.shortfall(want)
	if short != 0 || dups != 0 {
		t.Errorf("%d words short (e.g. %v), %d counted beyond their occurrences", short, missing, dups)
	}
	if got, wantN := tl.counted(), load.Records-poison; got != wantN {
		t.Errorf("%d committed count records for %d words: want exactly one per word", got, wantN)
	}
	if dead, total := tl.deadLetters(); int64(dead) != poison || int64(total) != poison {
		t.Errorf("%d committed dead letters (%d distinct) for %d poison records, want exactly one each", total, dead, poison)
	}
	if bad := tl.problems(); len(bad) > 0 {
		t.Errorf("unexpected output: %v", bad)
	}
	t.Logf("%d records through %d SIGKILLs and a node lost for good: %d committed counts, 0 lost, 0 duplicated; %d dead letters",
		load.Records, kills, tl.counted(), poison)
}
