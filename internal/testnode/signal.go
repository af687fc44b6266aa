package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/sdk"
)

// wait runs until SIGINT or SIGTERM, then stops the runtime (handing its
// instances to the other nodes).
func wait(rt *sdk.Runtime) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return rt.Stop(sctx)
}
