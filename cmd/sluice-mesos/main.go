// Command sluice-mesos runs the Sluice Mesos framework scheduler: it
// launches the node tasks of the pools in --pools on a Mesos cluster,
// supervises them, and publishes its status to Consul. Run two or more for
// high availability; one leads, the others stand by. See docs/mesos.md.
//
//	sluice-mesos --master http://mesos-master:5050 --consul 127.0.0.1:8500 \
//	    --cluster prod --pools pools.yaml --node-binary https://example.com/sluice-node
//
// Every flag can also be set from the environment as SLUICE_MESOS_<FLAG>
// (upper case, '-' as '_', e.g. SLUICE_MESOS_MASTER); --consul and
// --cluster also read SLUICE_CONSUL and SLUICE_CLUSTER, like the nodes.
// SIGINT or SIGTERM stops the scheduler (a leader steps down without
// tearing down the framework); SIGHUP reloads --pools.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/sluicehq/sluice/mesos"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	reload := make(chan struct{})
	go func() {
		for range hup {
			select {
			case reload <- struct{}{}:
			case <-ctx.Done():
				return
			}
		}
	}()
	err := mesos.Main(ctx, os.Args[1:], reload)
	switch {
	case errors.Is(err, flag.ErrHelp):
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "sluice-mesos:", err)
		os.Exit(1)
	}
}
