package kafka

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// health tracks whether a franz-go client reaches its brokers, from the
// client's own connection attempts and reads (it is installed as a hook).
// franz-go retries internally and never reports a down broker to a
// consumer, so this is how the source and the sink notice an outage and
// report it. Safe for concurrent use.
type health struct {
	down atomic.Bool
	mu   sync.Mutex
	err  error // the last failed dial
	at   time.Time
}

var (
	_ kgo.HookBrokerConnect = (*health)(nil)
	_ kgo.HookBrokerRead    = (*health)(nil)
)

// OnBrokerConnect implements kgo.HookBrokerConnect.
func (h *health) OnBrokerConnect(meta kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err == nil {
		h.down.Store(false)
		return
	}
	h.mu.Lock()
	if !h.down.Load() {
		h.at = time.Now()
	}
	h.err = fmt.Errorf("broker %s:%d: %w", meta.Host, meta.Port, err)
	h.down.Store(true)
	h.mu.Unlock()
}

// OnBrokerRead implements kgo.HookBrokerRead: a successful read means the
// brokers are back.
func (h *health) OnBrokerRead(_ kgo.BrokerMetadata, _ int16, _ int, _, _ time.Duration, err error) {
	if err == nil && h.down.Load() {
		h.down.Store(false)
	}
}

// unavailable returns an error wrapping ErrUnavailable while the last
// connection attempt failed, else nil.
func (h *health) unavailable() error {
	if !h.down.Load() {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err == nil {
		return nil
	}
	return fmt.Errorf("%w for %v: %v", ErrUnavailable, time.Since(h.at).Round(100*time.Millisecond), h.err)
}
