package main

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"

	"github.com/sluicehq/sluice/actors/wire"
)

// runRawSend runs the sending side of the raw protoactor remote
// benchmark, in a process of its own as each Sluice node is: a bare
// protoactor remote that prints "ready", waits for the line "go" on
// stdin, then sends n record-sized wire.Record messages with plain Send
// to the actor "sink" at sinkAddr (see runRawSink). Sends are queued, so
// it keeps running (its endpoint writer still sending) until stdin is
// closed.
func runRawSend(sinkAddr string, n int64) error {
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}))
	r := remote.NewRemote(system, remote.Configure("127.0.0.1", 0))
	r.Start()
	defer r.Shutdown(false)
	sink := actor.NewPID(sinkAddr, "sink")
	fmt.Println("ready")
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() || in.Text() != "go" {
		return fmt.Errorf("raw send: want the line \"go\" on stdin: %v", in.Err())
	}
	start := time.Now()
	for i := int64(0); i < n; i++ {
		system.Root.Send(sink, &wire.Record{Key: []byte("k" + strconv.FormatInt(i%10000, 10)), Value: strconv.AppendInt(nil, i, 10), EventTimeUnixNano: start.UnixNano()})
	}
	for in.Scan() { // until stdin closes
	}
	return nil
}
