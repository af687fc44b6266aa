package memdisc_test

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice/cluster"
	"github.com/sluicehq/sluice/cluster/memdisc"
)

func Example() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	reg := memdisc.NewRegistry()
	a, b := memdisc.New(reg), memdisc.New(reg)
	_ = a.Join(ctx, cluster.Member{ID: "b-node", Address: "127.0.0.1:9002", Kinds: []string{"map"}})
	_ = b.Join(ctx, cluster.Member{ID: "a-node", Address: "127.0.0.1:9001", Kinds: []string{"source", "map"}})

	watch := a.Watch(ctx)
	for _, m := range <-watch {
		fmt.Println(m.ID, m.Address, m.Kinds)
	}

	reg.Fail("a-node") // simulate a crash
	fmt.Println(len(<-watch), "member left")
	_ = a.Leave(ctx)
	// Output:
	// a-node 127.0.0.1:9001 [map source]
	// b-node 127.0.0.1:9002 [map]
	// 1 member left
}
