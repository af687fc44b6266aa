package nats

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	natsgo "github.com/nats-io/nats.go"

	"github.com/sluicehq/sluice/sdk"
)

// Stats are a connector's counters, shared by all its instances in this
// process (pass the same *Stats in the config). Safe for concurrent use;
// the zero value is ready.
type Stats struct {
	messages   atomic.Int64
	bytes      atomic.Int64
	errors     atomic.Int64
	duplicates atomic.Int64
	down       atomic.Int64
	outages    atomic.Int64

	mu  sync.Mutex
	lag map[int]uint64 // source: by instance index
}

// Messages returns the messages read (source) or published and
// acknowledged (sink).
func (s *Stats) Messages() int64 { return s.messages.Load() }

// Bytes returns the payload bytes of Messages.
func (s *Stats) Bytes() int64 { return s.bytes.Load() }

// Errors returns the failed operations: connects, polls, publishes,
// disconnections.
func (s *Stats) Errors() int64 { return s.errors.Load() }

// Duplicates returns the publishes the server acknowledged as duplicates
// (exactly-once sink: a commit repeated after a recovery).
func (s *Stats) Duplicates() int64 { return s.duplicates.Load() }

// Down returns the number of instances disconnected from the servers now.
func (s *Stats) Down() int64 { return s.down.Load() }

// Outages returns the number of disconnections seen so far.
func (s *Stats) Outages() int64 { return s.outages.Load() }

// Lag returns the source's lag: the messages of its subjects in the
// stream after the last one produced (the stream's last sequence minus
// ours, counted per filter), summed over instances, as of each instance's
// last message.
func (s *Stats) Lag() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n uint64
	for _, l := range s.lag {
		n += l
	}
	return n
}

func (s *Stats) setLag(index int, lag uint64) {
	if s == nil {
		return
	}
	s.mu.Lock()
	if s.lag == nil {
		s.lag = make(map[int]uint64)
	}
	s.lag[index] = lag
	s.mu.Unlock()
}

func (s *Stats) add(msgs, bytes int64) {
	if s != nil {
		s.messages.Add(msgs)
		s.bytes.Add(bytes)
	}
}

func (s *Stats) fail() {
	if s != nil {
		s.errors.Add(1)
	}
}

// health tracks one instance's connection (nats.go's handlers call it)
// and turns failures into the errors Poll, Flush and Commit return: an
// outage is transient and says for how long it has lasted, so that it
// shows in the instance's status (TransientErrors, LastError) while it
// lasts. Safe for concurrent use.
type health struct {
	stats *Stats
	conn  Connection

	mu    sync.Mutex
	down  bool
	since time.Time
	err   error
}

// options returns the handlers to install on the connection.
func (h *health) options() []natsgo.Option {
	return []natsgo.Option{
		natsgo.DisconnectErrHandler(func(_ *natsgo.Conn, err error) { h.disconnected(err) }),
		natsgo.ReconnectHandler(func(*natsgo.Conn) { h.reconnected() }),
		natsgo.ErrorHandler(func(_ *natsgo.Conn, _ *natsgo.Subscription, err error) {
			h.stats.fail()
			h.mu.Lock()
			h.err = err
			h.mu.Unlock()
		}),
	}
}

func (h *health) disconnected(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err == nil {
		err = errors.New("connection closed")
	}
	h.err = err
	if !h.down {
		h.down, h.since = true, time.Now()
		if h.stats != nil {
			h.stats.down.Add(1)
			h.stats.outages.Add(1)
			h.stats.errors.Add(1)
		}
	}
}

func (h *health) reconnected() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.down {
		h.down = false
		if h.stats != nil {
			h.stats.down.Add(-1)
		}
	}
}

// unavailable returns an error wrapping ErrUnavailable while the
// connection is down, else nil.
func (h *health) unavailable() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.down {
		return nil
	}
	return fmt.Errorf("%w for %v (Connection.URL %s): %v", ErrUnavailable, time.Since(h.since).Round(100*time.Millisecond), h.conn.URL, h.err)
}

// close forgets an outage (the instance's counter in Stats.Down).
func (h *health) close() { h.reconnected() }

// failure returns what to report for err, an operation that failed
// (what names it): transient, naming the outage if there is one.
func (h *health) failure(what string, err error) error {
	h.stats.fail()
	if u := h.unavailable(); u != nil {
		return fmt.Errorf("%s: %w: %w (%v)", what, sdk.ErrTransient, u, err)
	}
	return fmt.Errorf("%s: %w: %w", what, sdk.ErrTransient, err)
}

// connectError classifies a failed first connection: a refusal of the
// credentials or certificate (ErrAuthentication, naming the setting; not
// transient), else an outage or a wrong URL (ErrUnavailable, transient).
func (h *health) connectError(what string, err error) error {
	h.stats.fail()
	c := h.conn
	var (
		verify  *tls.CertificateVerificationError
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
	)
	switch {
	case errors.Is(err, natsgo.ErrAuthorization), errors.Is(err, natsgo.ErrAuthExpired), errors.Is(err, natsgo.ErrAuthRevoked):
		return fmt.Errorf("%s: %w: %s refused %s: %v; check %s", what, ErrAuthentication, c.URL, c.authName(), err, c.authField())
	case errors.As(err, &verify), errors.As(err, &unknown), errors.As(err, &host):
		return fmt.Errorf("%s: %w: %s: its TLS certificate was not accepted: %v; check Connection.TLS.CAFile", what, ErrAuthentication, c.URL, err)
	case strings.Contains(err.Error(), "remote error: tls:"), errors.Is(err, natsgo.ErrSecureConnRequired), errors.Is(err, natsgo.ErrSecureConnWanted):
		return fmt.Errorf("%s: %w: %s: TLS: %v; check the URL's scheme (tls://) and Connection.TLS (CertFile and KeyFile if the server verifies clients)", what, ErrAuthentication, c.URL, err)
	case strings.Contains(err.Error(), "after TLS handshake"):
		return fmt.Errorf("%s: %w: %s closed the connection after the TLS handshake (%v): it most likely requires a client certificate: set Connection.TLS.CertFile and KeyFile to one its CA signed", what, ErrAuthentication, c.URL, err)
	}
	return fmt.Errorf("%s: %w: %w: cannot connect to Connection.URL %s: %v", what, sdk.ErrTransient, ErrUnavailable, c.URL, err)
}

// authName describes the credentials configured.
func (c Connection) authName() string {
	switch {
	case c.User != "":
		return fmt.Sprintf("user %q", c.User)
	case c.Token != "":
		return "the token"
	case c.CredsFile != "":
		return "the credentials of " + c.CredsFile
	}
	return "an unauthenticated client"
}

// authField names the settings to check after a refusal.
func (c Connection) authField() string {
	switch {
	case c.User != "":
		return "Connection.User and Connection.Password"
	case c.Token != "":
		return "Connection.Token"
	case c.CredsFile != "":
		return "Connection.CredsFile"
	}
	return "Connection (the server requires credentials: set User/Password, Token or CredsFile)"
}
