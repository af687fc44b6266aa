package integration

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/actors/tail"
	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/internal/consultest"
)

// TestTailInACluster: a tail through n2 of a stream that a generator
// running on both nodes produces (the reader can only run on n2) gets its
// records, and the reader is gone from the shared topology in Consul once
// the client has them. (It does not check which node produced each.)
func TestTailInACluster(t *testing.T) {
	agent := consultest.Start(t)
	c := newCluster(t, agent.Addr(), "-records", "100000000", "-keys", "100", "-rate", "2000", "-gen-parallelism", "2", "-count-parallelism", "2")
	c.start("n1")
	n2 := c.start("n2")
	nodesOfGen := func() map[string]bool {
		on := map[string]bool{}
		c.eachInstance("gen", func(n *node, in api.NodeInstance) {
			if in.State == "running" {
				on[n.id] = true
			}
		})
		return on
	}
	c.waitFor(time.Minute, "gen to run on both nodes", func() bool { return len(nodesOfGen()) == 2 })
	resp, err := http.Get("http://" + n2.http + "/v1/streams/words/tail?n=300")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("tail through n2 = %d", resp.StatusCode)
	}
	got := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var r api.TailRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil || !strings.HasPrefix(r.Key, "k") {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		got++
	}
	if got != 300 {
		t.Fatalf("got %d records, want 300 (err %v)", got, sc.Err())
	}
	c.waitFor(time.Minute, "the reader to leave the topology", func() bool {
		var ops []api.OperatorView
		r, err := http.Get("http://" + n2.http + "/v1/operators")
		if err != nil {
			return false
		}
		defer r.Body.Close()
		if json.NewDecoder(r.Body).Decode(&ops) != nil {
			return false
		}
		for _, o := range ops {
			if strings.HasPrefix(o.Name, tail.Prefix) {
				return false
			}
		}
		return true
	})
}
