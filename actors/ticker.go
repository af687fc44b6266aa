package actors

import (
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// ticker calls send at every beat of a time.Ticker, from a goroutine it
// owns, until stopped. The node's long-lived actors (the coordinator of
// package actors/handoff, the checkpointer of actors/ckpt) start one
// through their Node's Tick (handoffNode, ckptNode) in their Started
// handler to send themselves a tick message, and stop it in Stopping.
type ticker struct {
	t        *time.Ticker
	stopCh   chan struct{}
	done     chan struct{} // closed when the goroutine has returned
	stopOnce sync.Once
}

// startTicker starts a ticker of period every whose goroutine is started
// by spawn (Node.goFunc, so that Node.Stop waits for it too).
func startTicker(spawn func(func()), every time.Duration, send func()) *ticker {
	tk := &ticker{t: time.NewTicker(every), stopCh: make(chan struct{}), done: make(chan struct{})}
	spawn(func() {
		defer close(tk.done)
		for {
			select {
			case <-tk.t.C:
				send()
			case <-tk.stopCh:
				return
			}
		}
	})
	return tk
}

// tickSelf starts a ticker that sends msg to pid every period, through the
// node's root context (a local send does not block: the mailbox is
// unbounded).
func (n *Node) tickSelf(pid *actor.PID, every time.Duration, msg any) *ticker {
	root := n.system.Root
	return startTicker(n.goFunc, every, func() { root.Send(pid, msg) })
}

// stop stops the ticker and waits for its goroutine to return: no send
// begins after it, none is in progress. It is safe to call more than once
// and on a nil ticker (an actor stopped before it started one), but must
// not be called from within send.
func (tk *ticker) stop() {
	if tk == nil {
		return
	}
	tk.stopOnce.Do(func() {
		tk.t.Stop()
		close(tk.stopCh)
	})
	<-tk.done
}
