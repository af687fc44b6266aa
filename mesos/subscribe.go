package mesos

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/encoding/codecs"
	"github.com/mesos/mesos-go/api/v1/lib/extras/scheduler/controller"
	"github.com/mesos/mesos-go/api/v1/lib/httpcli"
	"github.com/mesos/mesos-go/api/v1/lib/httpcli/httpsched"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler/calls"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler/events"
)

// The subscription, on mesos-go v0.0.11: httpcli for transport and
// codecs, httpsched for the subscription state machine (Mesos-Stream-Id),
// extras/scheduler/controller for the SUBSCRIBE call and the event loop,
// scheduler/calls to build calls.
//
// Each subscription attempt gets its own httpsched caller and context, so
// that the leader loop can end one subscription (missed heartbeats) and
// the next attempt starts clean. Notes on httpsched's behaviour that shape
// this code:
//   - it treats ANY error answer to a non-SUBSCRIBE call (400, 403, a
//     network error) as a lost subscription and cancels the stream: after
//     a refused ACCEPT the framework resubscribes (failover_timeout > 0
//     keeps its tasks) and reconciles;
//   - with its default settings a failed SUBSCRIBE is retried 9 times with
//     backoff (~55 s) before the error surfaces; MaxRedirects(0) turns
//     that off so that errors reach the status at once and the backoff
//     here (SubscribeBackoffMin..Max, jittered) applies. It also means a
//     307 from a non-leading master is not followed: list every master in
//     Config.Master and they are tried in turn.

// inputKind says what a loop input is.
type inputKind int

const (
	inAttempt inputKind = iota // a SUBSCRIBE attempt starts
	inEvent                    // an event of the current subscription
	inEnded                    // the attempt or subscription ended
)

// input is what the subscriber hands to the leader loop.
type input struct {
	kind     inputKind
	attempt  int
	ev       *scheduler.Event
	caller   calls.Caller       // inAttempt: the caller for calls in this subscription
	cancel   context.CancelFunc // inAttempt: ends the subscription
	endpoint string
	err      error
	// subscribed reports (inEnded) whether the attempt got SUBSCRIBED.
	subscribed bool
}

// subscriber runs SUBSCRIBE attempts one after the other until its
// context ends, and hands their events to the leader loop through in.
type subscriber struct {
	cfg         *Config
	endpoints   []string
	transport   http.RoundTripper
	httpAddr    string
	frameworkID func() string
	// holds checks that this process still leads before each SUBSCRIBE.
	holds func(context.Context) (bool, error)
	in    chan<- input
	log   *slog.Logger
}

// run blocks until ctx ends or leadership is found lost (reported as an
// inEnded input with an error wrapping ErrNotLeader).
func (s *subscriber) run(ctx context.Context) {
	retry := jittered(s.cfg.SubscribeBackoffMin, s.cfg.SubscribeBackoffMax)
	failures, next := 0, 0
	for attempt := 1; ctx.Err() == nil; attempt++ {
		if failures > 0 && !sleep(ctx, retry.Next()) {
			return
		}
		if ok, err := s.holds(ctx); err != nil || !ok {
			if err == nil {
				err = fmt.Errorf("mesos: lost the leader lock before subscribing: %w", ErrNotLeader)
				s.send(ctx, input{kind: inEnded, attempt: attempt, err: err})
				return
			}
			failures++
			s.send(ctx, input{kind: inEnded, attempt: attempt, err: err})
			continue
		}
		endpoint := s.endpoints[next%len(s.endpoints)]
		start := time.Now()
		subscribed, err := s.attempt(ctx, attempt, endpoint)
		if ctx.Err() != nil {
			return
		}
		switch {
		case subscribed && time.Since(start) >= s.stable():
			failures = 0
			retry.Reset()
		case subscribed:
			// A subscription that ends at once (e.g. a refused call ends it,
			// and the next one is refused again) backs off like a failure.
			failures++
		default:
			failures++
			next++ // try the next master
		}
		if err == nil {
			err = errors.New("subscription ended")
		}
		s.send(ctx, input{kind: inEnded, attempt: attempt, err: err, subscribed: subscribed, endpoint: endpoint})
	}
}

// attempt subscribes once and processes the subscription's events until
// it ends.
func (s *subscriber) attempt(ctx context.Context, attempt int, endpoint string) (subscribed bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	caller := s.newCaller(endpoint)
	if !s.send(ctx, input{kind: inAttempt, attempt: attempt, caller: caller, cancel: cancel, endpoint: endpoint}) {
		return false, ctx.Err()
	}
	handler := events.HandlerFunc(func(hctx context.Context, e *scheduler.Event) error {
		if e.GetType() == scheduler.Event_SUBSCRIBED {
			subscribed = true
		}
		if !s.send(hctx, input{kind: inEvent, attempt: attempt, ev: e}) {
			return hctx.Err()
		}
		return nil
	})
	// One token: controller.Run makes one SUBSCRIBE and returns when the
	// subscription ends; the loop above does the retrying.
	tokens := make(chan struct{}, 1)
	tokens <- struct{}{}
	close(tokens)
	var lastErr error
	controller.Run(ctx, s.frameworkInfo(), caller,
		controller.WithEventHandler(handler),
		controller.WithFrameworkID(s.frameworkID),
		controller.WithRegistrationTokens(tokens),
		controller.WithSubscriptionTerminated(func(err error) { lastErr = err }),
	)
	if lastErr != nil && !subscribed {
		lastErr = fmt.Errorf("SUBSCRIBE to %s: %w", endpoint, lastErr)
	}
	return subscribed, lastErr
}

// send hands an input to the loop; false if ctx ended first.
func (s *subscriber) send(ctx context.Context, in input) bool {
	select {
	case s.in <- in:
		return true
	case <-ctx.Done():
		return false
	}
}

// stable is how long a subscription must last for the next attempt to
// start without backoff.
func (s *subscriber) stable() time.Duration { return max(s.cfg.SubscribeBackoffMax, 10*time.Second) }

// newCaller builds the mesos-go client for one subscription.
func (s *subscriber) newCaller(endpoint string) calls.Caller {
	codec := codecs.ByMediaType[codecs.MediaTypeProtobuf]
	if s.cfg.Encoding == "json" {
		codec = codecs.ByMediaType[codecs.MediaTypeJSON]
	}
	opts := []httpcli.ConfigOpt{httpcli.RoundTripper(s.transport)}
	if s.cfg.Principal != "" && s.cfg.Secret != "" {
		opts = append(opts, httpcli.BasicAuth(s.cfg.Principal, s.cfg.Secret))
	}
	cli := httpcli.New(
		httpcli.Endpoint(endpoint),
		httpcli.Codec(codec),
		httpcli.Do(httpcli.With(opts...)),
	)
	return httpsched.NewCaller(cli, httpsched.MaxRedirects(0))
}

// frameworkInfo is the FrameworkInfo of every SUBSCRIBE (the controller
// adds the framework ID).
func (s *subscriber) frameworkInfo() *mesos.FrameworkInfo {
	c := s.cfg
	secs := c.FailoverTimeout.Seconds()
	checkpoint := c.Checkpoint
	info := &mesos.FrameworkInfo{
		User:            c.User,
		Name:            c.Name,
		FailoverTimeout: &secs,
		Checkpoint:      &checkpoint,
		Capabilities: []mesos.FrameworkInfo_Capability{
			{Type: mesos.FrameworkInfo_Capability_TASK_KILLING_STATE},
		},
	}
	if c.Principal != "" {
		info.Principal = ptr(c.Principal)
	}
	if len(c.Roles) > 0 {
		info.Roles = append([]string(nil), c.Roles...)
		info.Capabilities = append(info.Capabilities, mesos.FrameworkInfo_Capability{Type: mesos.FrameworkInfo_Capability_MULTI_ROLE})
	}
	if host, err := os.Hostname(); err == nil {
		info.Hostname = &host
	}
	if s.httpAddr != "" {
		info.WebUiURL = ptr("http://" + s.httpAddr + "/v1/mesos/status")
	}
	return info
}

// newTransport is the HTTP transport of every call to the master.
func newTransport(cfg *Config) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.ResponseHeaderTimeout = cfg.CallTimeout
	t.MaxIdleConnsPerHost = 2
	return t
}

// sleep waits d or until ctx ends; false if ctx ended.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
