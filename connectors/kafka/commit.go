package kafka

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/sluicehq/sluice/internal/backoff"
)

// Commit timing.
const (
	commitTimeout = 5 * time.Second // one OffsetCommit request
	finalTimeout  = 2 * time.Second // the last attempt, at close
)

// committer commits a source instance's offsets to its consumer group on a
// goroutine of its own, so that a slow or unreachable broker never blocks
// the instance. Only the latest offsets handed to set are committed (each
// set supersedes the previous); failed commits are retried with backoff.
// The Source owns it: startCommitter starts the goroutine, close stops it
// and waits for it.
type committer struct {
	adm   *kadm.Client
	group string
	log   *slog.Logger

	mu     sync.Mutex
	want   offsets // to commit; nil when nothing new
	closed bool

	wake    chan struct{} // capacity 1
	quit    chan struct{}
	done    chan struct{}
	stopCtx context.Context // cancelled by close: cuts a commit in progress short
	stop    context.CancelFunc
}

func startCommitter(adm *kadm.Client, group string, log *slog.Logger) *committer {
	c := &committer{adm: adm, group: group, log: log, wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	c.stopCtx, c.stop = context.WithCancel(context.Background())
	go c.run()
	return c
}

// set asks for o to be committed; it never blocks. o must not be modified
// afterwards.
func (c *committer) set(o offsets) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.want = o
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// close makes a last, bounded attempt to commit what is pending and stops
// the goroutine. It is safe to call twice.
func (c *committer) close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.mu.Unlock()
	c.stop()
	close(c.quit)
	<-c.done
}

func (c *committer) run() {
	defer close(c.done)
	delays := retryBackoff()
	var retry *time.Timer
	for {
		var retryC <-chan time.Time
		if retry != nil {
			retryC = retry.C
		}
		select {
		case <-c.wake:
			if retry != nil {
				continue // a retry is scheduled and will take the new offsets
			}
		case <-retryC:
			retry = nil
		case <-c.quit:
			if retry != nil {
				retry.Stop()
			}
			if err := c.commitOnce(context.Background(), finalTimeout); err != nil {
				c.log.Warn("kafka source: last offset commit failed; the next owner replays from the previous commit", "group", c.group, "error", err)
			}
			return
		}
		if err := c.commitOnce(c.stopCtx, commitTimeout); err != nil {
			if c.stopCtx.Err() != nil {
				continue // closing: the final attempt follows
			}
			delay := delays.Next()
			c.log.Warn("kafka source: offset commit failed; will retry", "group", c.group, "error", err, "retry_in", delay)
			retry = time.NewTimer(delay)
			continue
		}
		delays.Reset()
	}
}

// commitOnce commits the pending offsets, if any. On failure they stay
// pending unless newer ones arrived meanwhile.
func (c *committer) commitOnce(parent context.Context, timeout time.Duration) error {
	c.mu.Lock()
	o := c.want
	c.want = nil
	c.mu.Unlock()
	if len(o) == 0 {
		return nil
	}
	var os kadm.Offsets
	for k, at := range o {
		os.Add(kadm.Offset{Topic: k.topic, Partition: k.partition, At: at, LeaderEpoch: -1})
	}
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	resp, err := c.adm.CommitOffsets(ctx, c.group, os)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		c.mu.Lock()
		if c.want == nil {
			c.want = o
		}
		c.mu.Unlock()
	}
	return err
}

// retryBackoff returns the delays between retries of a failed request to
// the brokers (offset commits, state restores): from 100 ms doubling to
// 2 s, with ±20 % jitter.
func retryBackoff() *backoff.Backoff {
	return backoff.New(100*time.Millisecond, 2*time.Second, 0.2)
}
