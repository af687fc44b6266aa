package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/internal/consultest"
)

// scale calls the control API of node n.
func scale(t *testing.T, n *node, op string, instances int) api.DeployResponse {
	t.Helper()
	b, _ := json.Marshal(api.ScaleRequest{Instances: instances})
	req, _ := http.NewRequest(http.MethodPut, fmt.Sprintf("http://%s/v1/operators/%s/instances", n.http, op), bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var dr api.DeployResponse
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scale %s to %d: %s", op, instances, resp.Status)
	}
	_ = json.NewDecoder(resp.Body).Decode(&dr)
	return dr
}

func TestRescaleOnThreeNodesKeepsCountsExact(t *testing.T) {
	const records, keys = 1_000_000, 10_000
	agent := consultest.Start(t)
	c := newCluster(t, agent.Addr(), "-records", fmt.Sprint(records), "-keys", fmt.Sprint(keys),
		"-rate", "40000", "-gen-parallelism", "3", "-count-parallelism", "2")
	n1 := c.start("n1")
	c.start("n2")
	c.start("n3")
	for i, n := range []int{5, 1, 3} {
		at := int64(i+1) * records / 4
		c.waitFor(2*time.Minute, fmt.Sprintf("%d records produced", at), func() bool { return c.produced("gen") >= at })
		dr := scale(t, n1, "count", n)
		t.Logf("scaled count to %d after %d records (epoch %d)", n, c.produced("gen"), dr.Operator.Epoch)
	}
	c.waitFor(3*time.Minute, "every record produced", func() bool { return c.produced("gen") >= records })
	c.stop("n1")
	c.stop("n2")
	c.stop("n3")
	counts := readCounts(t, c.dir+"/n3/data")
	if len(counts) != keys {
		t.Fatalf("%d keys in the last node's state, want %d", len(counts), keys)
	}
	for k, n := range counts {
		if n != records/keys {
			t.Fatalf("key %s counted %d, want %d", k, n, records/keys)
		}
	}
	checkNoDoubleActivity(t, c.events(), nil)
}
