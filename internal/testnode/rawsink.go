package main

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"

	"github.com/sluicehq/sluice/actors/wire"
)

// runRawSink runs the receiving side of the raw protoactor remote
// benchmark: an actor named "sink" that counts wire.Record messages and
// prints "done" after n of them. It prints "ready addr=HOST:PORT" first.
func runRawSink(bind string, n int64) error {
	host, portStr, err := net.SplitHostPort(bind)
	if err != nil {
		return err
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return err
	}
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}))
	r := remote.NewRemote(system, remote.Configure(host, port))
	r.Start()
	done := make(chan struct{})
	var count int64
	_, err = system.Root.SpawnNamed(actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(*wire.Record); ok {
			if count++; count == n {
				close(done)
			}
		}
	}), "sink")
	if err != nil {
		return err
	}
	fmt.Printf("ready addr=%s\n", system.Address())
	<-done
	fmt.Println("done")
	r.Shutdown(false)
	return nil
}
