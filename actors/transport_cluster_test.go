//go:build !race

// Several nodes in one process: see cluster_test.go for why not under -race.

package actors_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/sluicehq/sluice/actors"
	"github.com/sluicehq/sluice/actors/transport"
	"github.com/sluicehq/sluice/cluster"
	"github.com/sluicehq/sluice/cluster/memdisc"
	"github.com/sluicehq/sluice/creds/credstest"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/internal/sluicetest"
	tpebble "github.com/sluicehq/sluice/topology/pebble"
)

// TestClusterMutualTLS: nodes with mutual TLS exchange records (every
// record crosses from the node hosting the source to those hosting the
// counter), and one hands its state over to another when it leaves
// (handoff chunks are taken from the node that was asked for them).
func TestClusterMutualTLS(t *testing.T) {
	const records, keys = 20_000, 500
	ca := credstest.NewCA(t, "cluster CA")
	reg := memdisc.NewRegistry()
	total := &atomic.Int64{}
	ops := []core.Factory{
		func() core.Operator {
			return &sluicetest.Gen{Name: "gen", Stream: "words", Count: records, Key: sluicetest.Key(keys), Batch: 64, Parallelism: 2}
		},
		func() core.Operator { return &counter{name: "count", input: "words", parallelism: 8, total: total} },
	}
	logger, logs := newLogRecorder(t)
	dirs := map[string]string{"a": t.TempDir(), "b": t.TempDir(), "c": t.TempDir()}
	host := map[string][]string{"a": {"gen"}, "b": {"count"}, "c": {"count"}}
	nodes := map[string]*actors.Node{}
	for _, id := range []string{"b", "c", "a"} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		n, err := actors.Start(ctx, actors.Config{
			LocalStore: tpebble.Local,
			NodeID:     id, DataDir: dirs[id], NoSync: true, Logger: logger, Host: host[id],
			Cluster: &actors.ClusterConfig{Discovery: memdisc.New(reg), Security: transport.Security{TLS: ca.Node(t, id).Config()}},
		}, ops...)
		cancel()
		if err != nil {
			t.Fatalf("start %s: %v", id, err)
		}
		nodes[id] = n
		t.Cleanup(func() { _ = n.Stop(context.Background()) })
	}
	sluicetest.WaitFor(t, time.Minute, "every record counted", func() bool { return total.Load() == records })
	if pb, pc := processed(nodes["b"], "count"), processed(nodes["c"], "count"); pb == 0 || pc == 0 || pb+pc != records {
		t.Fatalf("counted %d records on b and %d on c, want %d in all, on both", pb, pc, records)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	plain, err := grpc.NewClient(nodes["b"].Address(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	sluicetest.Must(t, err)
	if _, err := connect(ctx, plain); err == nil {
		t.Fatal("a plaintext client connected to a node with mutual TLS")
	}
	_ = plain.Close()
	sluicetest.Must(t, nodes["c"].Stop(ctx)) // hands its counts to b
	sluicetest.Must(t, nodes["a"].Stop(ctx))
	sluicetest.Must(t, nodes["b"].Stop(ctx))
	counts, _ := readCounts(t, dirs["b"], "count")
	var sum int64
	for _, c := range counts {
		sum += c
	}
	if len(counts) != keys || sum != records {
		t.Fatalf("b holds %d keys adding up to %d after c left, want %d and %d", len(counts), sum, keys, records)
	}
	if logs.has("dropped a") {
		t.Fatal("a message between the nodes was dropped")
	}
	// A connection refused while dialling an address that is no member's
	// is not one between the nodes: once c has left, a may still dial c's
	// old port, which a test running beside this one (go test runs
	// packages in parallel) may have bound since, without TLS.
	for _, id := range []string{"a", "b", "c"} {
		if logs.has("cannot connect", "member="+id+" ") {
			t.Fatalf("a connection to member %s was refused", id)
		}
	}
}

// TestClusterMutualTLSChecksWhomItDials: a node reaching a member's address
// refuses a server whose certificate names another node.
func TestClusterMutualTLSChecksWhomItDials(t *testing.T) {
	ca := credstest.NewCA(t, "cluster CA")
	logger, logs := newLogRecorder(t)
	x := startTLSNode(t, "x", ca.Node(t, "x"), logger)
	reg := memdisc.NewRegistry()
	// The membership says n2 is at x's address.
	sluicetest.Must(t, memdisc.New(reg).Join(context.Background(), cluster.Member{ID: "n2", Address: x.Address(), Kinds: []string{"count"}}))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, err := actors.Start(ctx, actors.Config{
		LocalStore: tpebble.Local,
		NodeID:     "a", DataDir: t.TempDir(), NoSync: true, Logger: logger,
		Cluster: &actors.ClusterConfig{Discovery: memdisc.New(reg), Security: transport.Security{TLS: ca.Node(t, "a").Config()}},
	}, func() core.Operator { return &counter{name: "count", input: "words", parallelism: 4} })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = a.Stop(ctx)
	})
	sluicetest.WaitFor(t, 30*time.Second, "the connection to n2 refused", func() bool {
		return logs.has("node transport: cannot connect to a node", "member=n2", `presented the certificate of "x", want that of member "n2"`)
	})
}
