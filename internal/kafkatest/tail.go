package kafkatest

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Tail reads topics from their start, without a consumer group, on a
// goroutine of its own, calling fn with every record (in order within a
// partition) until Close. It rides out broker restarts.
type Tail struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
}

// NewTail starts reading topics of the brokers at addrs, records of
// aborted and open transactions included. fn runs on the Tail's goroutine.
func NewTail(addrs []string, fn func(*kgo.Record), topics ...string) (*Tail, error) {
	return newTail(addrs, fn, kgo.ReadUncommitted(), topics)
}

// NewCommittedTail is NewTail reading only committed records (a
// read_committed consumer): what exactly-once output looks like to users.
func NewCommittedTail(addrs []string, fn func(*kgo.Record), topics ...string) (*Tail, error) {
	return newTail(addrs, fn, kgo.ReadCommitted(), topics)
}

func newTail(addrs []string, fn func(*kgo.Record), iso kgo.IsolationLevel, topics []string) (*Tail, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumeTopics(topics...), kgo.FetchIsolationLevel(iso),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(16<<20))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	t := &Tail{cl: cl, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(t.done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			if fs.IsClientClosed() {
				return
			}
			fs.EachRecord(fn)
		}
	}()
	return t, nil
}

// Close stops reading and waits for the goroutine. It is safe to call
// twice.
func (t *Tail) Close() {
	t.cancel()
	<-t.done
	t.cl.Close()
}
