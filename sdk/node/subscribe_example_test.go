package node_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
)

// A test or tool reads the counts the Counter produces.
func ExampleRuntime_Subscribe() {
	dir, _ := os.MkdirTemp("", "sluice-example-")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	rt, err := node.Start(ctx, node.Config{NodeConfig: node.NodeConfig{DataDir: dir}},
		func() sdk.Operator { return Counter{} })
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Stop(ctx)

	sub, err := rt.Subscribe(ctx, "counts") // from now on
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sub.Close()
	for _, w := range []string{"a", "b", "a"} {
		_ = rt.Produce(ctx, "words", sdk.Record{Key: []byte(w)})
	}
	seen := map[string]string{}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for range 3 {
		rec, err := sub.Next(rctx)
		if err != nil {
			fmt.Println(err)
			return
		}
		seen[string(rec.Key)] = string(rec.Value) // keys go to different instances: order per key only
	}
	fmt.Println("a:", seen["a"], "b:", seen["b"])
	// Output: a: 2 b: 1
}
