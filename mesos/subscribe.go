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

	"github.com/sluicehq/sluice/internal/backoff"
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
//   - it can follow a 307 for SUBSCRIBE only, and then sends every other
//     call to the master it started from; with its default settings it
//     also retries a failed SUBSCRIBE 9 times (~55 s) before the error
//     surfaces. MaxRedirects(0) turns both off: the subscriber finds the
//     leader itself.
//
// Finding the leading master (docs/high-availability.md, Mesos'
// Master::Http::scheduler): every call of an attempt goes through a
// masterProbe. A master that does not lead answers 307 with the leader in
// Location: the next attempt goes there at once, and the whole
// subscription (every call) uses that endpoint. A master that answers 503
// is there but not ready (no leader elected yet, or elected and still
// recovering its state after a failover): it is asked again after the
// backoff. A master that does not answer at all is left for the next URL
// of Config.Master. A subscription that ends goes back to the master it
// had, which redirects if it no longer leads.

// maxRedirects bounds the redirects followed in a row without a
// subscription (masters that disagree about the leader); then the
// subscriber backs off and starts again from Config.Master.
const maxRedirects = 3

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
	// redirected reports (inEnded) that the master named another as the
	// leader, where the next attempt goes at once: not a problem.
	redirected bool
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
	retry := backoff.New(s.cfg.SubscribeBackoffMin, s.cfg.SubscribeBackoffMax, 0.5)
	failures, next, hops := 0, 0, 0
	endpoint := s.endpoints[0]
	redirected := false // the last attempt was redirected: no backoff
	for attempt := 1; ctx.Err() == nil; attempt++ {
		if failures > 0 && !redirected && !backoff.Sleep(ctx, retry.Next()) {
			return
		}
		if ok, err := s.holds(ctx); err != nil || !ok {
			if err == nil {
				err = fmt.Errorf("mesos: lost the leader lock before subscribing: %w", ErrNotLeader)
				s.send(ctx, input{kind: inEnded, attempt: attempt, err: err})
				return
			}
			failures++
			redirected = false
			s.send(ctx, input{kind: inEnded, attempt: attempt, err: err})
			continue
		}
		probe := &masterProbe{next: s.transport}
		start := time.Now()
		subscribed, err := s.attempt(ctx, attempt, endpoint, probe)
		if ctx.Err() != nil {
			return
		}
		leader, unavailable := probe.after()
		from := endpoint
		redirected = false
		switch {
		case leader != "" && leader != endpoint && hops < maxRedirects:
			// Not the leader: go to the one it names, at once.
			hops++
			endpoint, redirected = leader, true
			err = fmt.Errorf("%s does not lead; redirected to %s", from, leader)
		case subscribed && time.Since(start) >= s.stable():
			failures, hops = 0, 0
			retry.Reset()
		case subscribed:
			// A subscription that ends at once (e.g. a refused call ends it,
			// and the next one is refused again) backs off like a failure.
			failures++
			hops = 0
		case unavailable != "" && leader == "":
			// There, but not ready: ask it again after the backoff.
			failures++
			err = fmt.Errorf("%s is unavailable: %s", from, unavailable)
		default:
			// Not answering, refusing, or redirecting in circles: the next
			// master of the list.
			failures++
			hops = 0
			next++
			endpoint = s.endpoints[next%len(s.endpoints)]
		}
		if err == nil {
			err = errors.New("subscription ended")
		}
		s.send(ctx, input{kind: inEnded, attempt: attempt, err: err, subscribed: subscribed, redirected: redirected, endpoint: from})
	}
}

// attempt subscribes once and processes the subscription's events until
// it ends.
func (s *subscriber) attempt(ctx context.Context, attempt int, endpoint string, probe *masterProbe) (subscribed bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	caller := s.newCaller(endpoint, probe)
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
	lastErr = explainUnauthorized(s.cfg, endpoint, probe.authChallenge(), lastErr)
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

// newCaller builds the mesos-go client for one subscription, whose calls
// all go to endpoint through probe.
func (s *subscriber) newCaller(endpoint string, probe *masterProbe) calls.Caller {
	codec := codecs.ByMediaType[codecs.MediaTypeProtobuf]
	if s.cfg.Encoding == "json" {
		codec = codecs.ByMediaType[codecs.MediaTypeJSON]
	}
	opts := []httpcli.ConfigOpt{httpcli.RoundTripper(probe)}
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
			// TASK_UNREACHABLE, TASK_GONE, TASK_GONE_BY_OPERATOR and
			// TASK_UNKNOWN instead of TASK_LOST (partition.go).
			{Type: mesos.FrameworkInfo_Capability_PARTITION_AWARE},
			// Reservations as the "reservations" stack, as volumes.go
			// makes them (Mesos 1.4+).
			{Type: mesos.FrameworkInfo_Capability_RESERVATION_REFINEMENT},
		},
	}
	if c.GPUResources {
		info.Capabilities = append(info.Capabilities, mesos.FrameworkInfo_Capability{Type: mesos.FrameworkInfo_Capability_GPU_RESOURCES})
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
