package bench

import (
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// ProtoactorChain sends n messages through a chain of three protoactor
// actors (root → a → b → c) with plain Send, the baseline for in-process
// message passing.
func ProtoactorChain(n int) (Result, error) {
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}))
	defer system.Shutdown()
	done := make(chan struct{})
	count := 0
	c := system.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(int); ok {
			if count++; count == n {
				close(done)
			}
		}
	}))
	forward := func(next *actor.PID) *actor.Props {
		return actor.PropsFromFunc(func(ctx actor.Context) {
			if m, ok := ctx.Message().(int); ok {
				ctx.Send(next, m)
			}
		})
	}
	b := system.Root.Spawn(forward(c))
	a := system.Root.Spawn(forward(b))
	start := time.Now()
	for i := 0; i < n; i++ {
		system.Root.Send(a, i)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		return Result{}, fmt.Errorf("bench: chain: only %d of %d messages arrived", count, n)
	}
	return Result{Ops: int64(n), Elapsed: time.Since(start)}, nil
}
