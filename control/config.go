package control

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/sluicehq/sluice/control/api"
)

// Config configures a control API server. Zero fields take the defaults of
// DefaultConfig.
type Config struct {
	// Addr is the address to listen on: host:port, ":0" for a free port.
	// Required.
	Addr string
	// Logger receives the server's logs; nil means slog.Default().
	Logger *slog.Logger
	// Security says who may use the API: TLS, tokens, client certificates.
	// The zero value is no authentication, allowed on loopback only.
	Security Security
	// Limits bound what a client may cost the node.
	Limits Limits
	// CheckManifest, when set, is asked about every manifest before it is
	// deployed and returns its problems, each "field: problem" (the
	// launcher's environment policy, say); any problem refuses the deploy
	// with 400.
	CheckManifest func(api.Manifest) []string
	// Autoscale configures the autoscaler (on by default; it acts only on
	// operators deployed with autoscale settings).
	Autoscale AutoscaleConfig
}

// Limits bound the resources a client can hold on the node: how large a
// request may be and how long a connection may take. Zero fields take the
// defaults of DefaultLimits.
type Limits struct {
	// MaxBodyBytes bounds a request body (a deployment of many manifests
	// included); a larger one is answered 413.
	MaxBodyBytes int64
	// MaxHeaderBytes bounds the request line and headers.
	MaxHeaderBytes int
	// ReadHeaderTimeout bounds the TLS handshake and reading the headers;
	// ReadTimeout reading the whole request, body included. A client
	// sending slower is disconnected.
	ReadHeaderTimeout, ReadTimeout time.Duration
	// WriteTimeout bounds handling a request and writing the answer.
	WriteTimeout time.Duration
	// IdleTimeout bounds how long a kept-alive connection waits for the
	// next request.
	IdleTimeout time.Duration
	// MaxConns bounds the connections held at once. A connection past it
	// closes the oldest idle one (one that never authenticated first), or
	// is closed itself when every connection is busy: accepting never
	// waits, so idle connections cannot lock an administrator out.
	MaxConns int
	// MaxConnsPerClient bounds the connections of one IP address in the
	// same way.
	MaxConnsPerClient int
	// UnauthIdleTimeout bounds how long a kept-alive connection that has
	// not authenticated waits for its next request (IdleTimeout applies
	// to the others).
	UnauthIdleTimeout time.Duration
	// PeerTimeout bounds a request to another node (for its status).
	PeerTimeout time.Duration
}

// DefaultLimits returns the default limits: 1 MiB bodies, 64 KiB headers,
// 10 s for the headers, 30 s for a request, 60 s to answer, 2 min idle
// (10 s before a connection has authenticated), 1024 connections, 128 of
// them per client address, 3 s per request to another node.
func DefaultLimits() Limits {
	return Limits{
		MaxBodyBytes:      1 << 20,
		MaxHeaderBytes:    64 << 10,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxConns:          1024,
		MaxConnsPerClient: 128,
		UnauthIdleTimeout: 10 * time.Second,
		PeerTimeout:       3 * time.Second,
	}
}

// DefaultConfig returns a Config with every default set, listening on
// 127.0.0.1:7070 without authentication.
func DefaultConfig() Config {
	return Config{Addr: "127.0.0.1:7070", Logger: slog.Default(), Limits: DefaultLimits()}
}

// withDefaults fills in zero fields.
func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	c.Limits = c.Limits.withDefaults()
	return c
}

// withDefaults fills in zero fields.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxBodyBytes == 0 {
		l.MaxBodyBytes = d.MaxBodyBytes
	}
	if l.MaxHeaderBytes == 0 {
		l.MaxHeaderBytes = d.MaxHeaderBytes
	}
	if l.ReadHeaderTimeout == 0 {
		l.ReadHeaderTimeout = d.ReadHeaderTimeout
	}
	if l.ReadTimeout == 0 {
		l.ReadTimeout = d.ReadTimeout
	}
	if l.WriteTimeout == 0 {
		l.WriteTimeout = d.WriteTimeout
	}
	if l.IdleTimeout == 0 {
		l.IdleTimeout = d.IdleTimeout
	}
	if l.MaxConns == 0 {
		l.MaxConns = d.MaxConns
	}
	if l.MaxConnsPerClient == 0 {
		l.MaxConnsPerClient = d.MaxConnsPerClient
	}
	if l.UnauthIdleTimeout == 0 {
		l.UnauthIdleTimeout = d.UnauthIdleTimeout
	}
	if l.PeerTimeout == 0 {
		l.PeerTimeout = d.PeerTimeout
	}
	return l
}

// Validate checks c: every problem names the field and the fix.
func (c Config) Validate() error {
	var errs []error
	if c.Addr == "" {
		errs = append(errs, errors.New("control: Addr is empty: give host:port to listen on (127.0.0.1:0 for a free port)"))
	}
	if err := c.Limits.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Security.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Validate checks l: no negative value.
func (l Limits) Validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"MaxBodyBytes", l.MaxBodyBytes}, {"MaxHeaderBytes", int64(l.MaxHeaderBytes)}, {"MaxConns", int64(l.MaxConns)},
		{"ReadHeaderTimeout", int64(l.ReadHeaderTimeout)}, {"ReadTimeout", int64(l.ReadTimeout)}, {"WriteTimeout", int64(l.WriteTimeout)},
		{"IdleTimeout", int64(l.IdleTimeout)}, {"PeerTimeout", int64(l.PeerTimeout)},
		{"MaxConnsPerClient", int64(l.MaxConnsPerClient)}, {"UnauthIdleTimeout", int64(l.UnauthIdleTimeout)},
	} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("control: Limits.%s must be ≥ 0 (0: the default), got %d", f.name, f.v))
		}
	}
	return errors.Join(errs...)
}
