package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/sdk/node"
)

// wait runs until SIGINT or SIGTERM, then stops the runtime (handing its
// instances to the other nodes). If the node fails (its state database:
// a full disk) it returns at once with the reason, as node.Run does.
func wait(rt *node.Runtime) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	select {
	case <-ctx.Done():
	case <-rt.Failed():
		return fmt.Errorf("%w: %s", node.ErrNodeFailed, rt.Node().Health().Reason)
	}
	sctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return rt.Stop(sctx)
}
