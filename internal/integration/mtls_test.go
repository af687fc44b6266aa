package integration

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/creds/credstest"
	"github.com/sluicehq/sluice/internal/consultest"
)

// TestNodesWithMutualTLSCountExactly: node processes configured with
// -node-ca, -node-cert and -node-key exchange every record over mutual TLS
// (the generator runs on n1, the counter on n2 and n3), and n3 hands its
// state to n2 when it leaves.
func TestNodesWithMutualTLSCountExactly(t *testing.T) {
	const records = 40_000
	agent := consultest.Start(t)
	ca := credstest.NewCA(t, "cluster CA")
	c := newCluster(t, agent.Addr(), "-records", fmt.Sprint(records), "-keys", "1000", "-rate", "5000",
		"-gen-parallelism", "2", "-count-parallelism", "6")
	host := map[string]string{"n1": "gen", "n2": "count", "n3": "count"}
	c.nodeFlags = func(id string) []string {
		f := ca.Node(t, id)
		return []string{"-node-ca", f.CA, "-node-cert", f.Cert, "-node-key", f.Key, "-host", host[id]}
	}
	for _, id := range []string{"n2", "n3", "n1"} {
		c.start(id)
	}
	c.waitFor(2*time.Minute, "half the records counted", func() bool { return c.processed("count") >= records/2 })
	c.stop("n3")
	c.waitFor(2*time.Minute, "every record counted", func() bool { return c.processed("count") >= records })
	if got := c.processed("count"); got != records {
		t.Fatalf("processed %d records, want exactly %d", got, records)
	}
	for _, id := range []string{"n1", "n2", "n3"} {
		b, err := os.ReadFile(filepath.Join(c.dir, id+".log"))
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{"dropped a message claiming", "node transport: refused", "node transport: cannot connect", "not authenticated"} {
			if strings.Contains(string(b), bad) {
				t.Errorf("%s logged %q:\n%s", id, bad, c.logTail(id))
			}
		}
	}
}

// TestLauncherSlugsJoinOverMutualTLS: a slug started by a node's launcher
// gets the node's certificate (SLUICE_NODE_*) and, with its node id
// "<operator>-<node>-<n>", is taken as speaking for that node: it counts
// the records n1 sends it, and leaves when its operator is killed.
func TestLauncherSlugsJoinOverMutualTLS(t *testing.T) {
	agent := consultest.Start(t)
	launcherEnv(t)
	ca := credstest.NewCA(t, "cluster CA")
	c := newCluster(t, agent.Addr(), "-records", "0", "-rate", "2000", "-gen-parallelism", "1", "-host", "gen", "-launch")
	c.nodeFlags = func(id string) []string {
		f := ca.Node(t, id)
		return []string{"-node-ca", f.CA, "-node-cert", f.Cert, "-node-key", f.Key}
	}
	n1 := c.start("n1")
	if code := post(t, n1, api.Manifest{Name: "tally", Kind: "count", Executable: nodeBinary, Instances: 2,
		Inputs: []api.ManifestInput{{Stream: "words", Routing: "group-by"}}}); code != 201 {
		t.Fatalf("deploy tally = %d", code)
	}
	c.waitFor(time.Minute, "the launched slug to count records", func() bool {
		cs, err := clusterStatus(n1)
		if err != nil {
			return false
		}
		for _, op := range cs.Operators {
			for _, in := range op.Placement {
				if op.Name == "tally" && in.Processed > 0 && strings.HasPrefix(in.Node, "tally-n1-") {
					return true
				}
			}
		}
		return false
	})
	resp, err := call(http.MethodDelete, n1, "/v1/operators/tally", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	c.waitFor(time.Minute, "the slug to leave", func() bool {
		cs, err := clusterStatus(n1)
		return err == nil && len(cs.Nodes) == 1 && len(cs.Launcher) == 0
	})
	for _, log := range []string{filepath.Join(c.dir, "n1.log"), filepath.Join(c.dir, "n1", "data", "launched", "tally.log")} {
		b, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{"dropped a", "node transport: refused", "node transport: cannot connect"} {
			if strings.Contains(string(b), bad) {
				t.Errorf("%s logged %q:\n%s", log, bad, b)
			}
		}
	}
}
