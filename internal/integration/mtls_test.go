package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
