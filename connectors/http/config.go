package http

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/creds"
	"github.com/sluicehq/sluice/sdk"
)

// Defaults for zero fields.
const (
	DefaultMaxBodyBytes      = 8 << 20
	DefaultMaxRecordBytes    = 1 << 20
	DefaultQueueRequests     = 256
	DefaultMaxPollRecords    = 4096
	DefaultMaxWaiting        = 4096
	DefaultPollTimeout       = 100 * time.Millisecond
	DefaultRetryAfter        = time.Second
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultIdempotencyWindow = 24 * time.Hour
	DefaultBatchRecords      = 500
	DefaultBatchBytes        = 1 << 20
	DefaultRequestTimeout    = 10 * time.Second
	DefaultMaxAttempts       = 8
	DefaultDeadLetterAfter   = 3
	DefaultMaxInFlight       = 4
	DefaultMinBackoff        = 100 * time.Millisecond
	DefaultMaxBackoff        = 10 * time.Second
)

// ServerTLS is the source's TLS: its certificate and key, and the CA
// bundle that signs client certificates, PEM files read (and reloaded)
// by the creds package.
type ServerTLS struct {
	// Files are the PEM files: CertFile and KeyFile are required, CAFile
	// when ClientAuth asks for client certificates.
	Files creds.Config
	// ClientAuth says whether clients present certificates:
	// creds.RequireClientCert authenticates every client by its
	// certificate; creds.VerifyClientCertIfGiven accepts a certificate
	// or a bearer token.
	ClientAuth creds.ClientAuth
}

// SourceConfig configures the webhook source (NewSource).
type SourceConfig struct {
	// Name is the operator's name; Output the stream it produces to.
	Name, Output string
	// Parallelism and KeyGroups as in sdk.Metadata. Instance i listens
	// on Listen's port + i (see the package documentation).
	Parallelism, KeyGroups int
	// Listen is the address instance 0 listens on ("host:port"; port 0
	// picks a free one for each instance, reported by Stats.Addr).
	Listen string
	// Path is the URL path records are POSTed to; "" means any path.
	Path string
	// Tokens are the bearer tokens a client may present
	// ("Authorization: Bearer <token>"), compared in constant time.
	// With neither Tokens nor client certificates every request is
	// refused, unless Insecure is set.
	Tokens []string
	// TLS, when set, serves HTTPS and may authenticate clients by their
	// certificates.
	TLS *ServerTLS
	// Insecure accepts unauthenticated requests (tests, development).
	Insecure bool
	// KeyField, when set, names a top-level string field of each JSON
	// record whose value becomes the record's key.
	KeyField string
	// MaxBodyBytes bounds a request body (413 beyond); 0 means 8 MiB.
	MaxBodyBytes int64
	// MaxRecordBytes bounds one record (413 naming it); 0 means 1 MiB.
	MaxRecordBytes int
	// QueueRequests bounds the requests waiting for Poll; a full queue
	// answers 429 with Retry-After. 0 means 256.
	QueueRequests int
	// MaxWaiting bounds the requests queued or produced and not yet
	// answered (under exactly-once they wait for a checkpoint); beyond it
	// requests are answered 429. 0 means 4096.
	MaxWaiting int
	// MaxPollRecords bounds the records one Poll produces; 0 means 4096.
	MaxPollRecords int
	// PollTimeout is how long an idle Poll waits for a request; 0 means
	// 100 ms.
	PollTimeout time.Duration
	// RetryAfter is the Retry-After of 429 and 503 answers; 0 means 1 s.
	RetryAfter time.Duration
	// ReadHeaderTimeout and ReadTimeout bound reading a request's header
	// and whole request (slow clients); 0 means 5 s and 30 s.
	ReadHeaderTimeout, ReadTimeout time.Duration
	// IdempotencyWindow is how long an Idempotency-Key is remembered in
	// State (a request repeating one is answered without producing its
	// records again); 0 means 24 h, negative turns it off.
	IdempotencyWindow time.Duration
	// Stats, when set, receives the source's counters (shared by its
	// instances).
	Stats *Stats
}

// withDefaults fills in zero fields.
func (c SourceConfig) withDefaults() SourceConfig {
	def(&c.MaxBodyBytes, DefaultMaxBodyBytes)
	def(&c.MaxRecordBytes, DefaultMaxRecordBytes)
	def(&c.QueueRequests, DefaultQueueRequests)
	def(&c.MaxPollRecords, DefaultMaxPollRecords)
	def(&c.MaxWaiting, DefaultMaxWaiting)
	def(&c.PollTimeout, DefaultPollTimeout)
	def(&c.RetryAfter, DefaultRetryAfter)
	def(&c.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	def(&c.ReadTimeout, DefaultReadTimeout)
	def(&c.IdempotencyWindow, DefaultIdempotencyWindow)
	if c.Stats == nil {
		c.Stats = new(Stats)
	}
	return c
}

func def[T int | int64 | time.Duration](v *T, d T) {
	if *v == 0 {
		*v = d
	}
}

// Validate names the first wrong fields of c and their fix.
func (c SourceConfig) Validate() error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: http source: "+format, append([]any{ErrConfig}, a...)...))
	}
	if c.Name == "" || c.Output == "" {
		bad("SourceConfig.Name and Output are required")
	}
	if _, port, err := net.SplitHostPort(c.Listen); err != nil {
		bad("SourceConfig.Listen %q: want host:port (e.g. :8080, 127.0.0.1:0)", c.Listen)
	} else if p, err := strconv.Atoi(port); err != nil || p < 0 || p+max(c.Parallelism, 1)-1 > 65535 {
		bad("SourceConfig.Listen %q: port must be a number from 0 to 65535 (instance i listens on port + i)", c.Listen)
	}
	if len(c.Tokens) == 0 && !c.Insecure && (c.TLS == nil || c.TLS.ClientAuth == creds.NoClientCert) {
		bad("no authentication: set SourceConfig.Tokens, TLS with ClientAuth, or Insecure (development only)")
	}
	for i, t := range c.Tokens {
		if len(t) < 16 {
			bad("SourceConfig.Tokens[%d] is %d characters: use at least 16 (openssl rand -hex 32)", i, len(t))
		}
	}
	if c.TLS != nil {
		if c.TLS.Files.CertFile == "" {
			bad("SourceConfig.TLS.Files.CertFile and KeyFile are required for HTTPS")
		} else if err := c.TLS.Files.Validate(); err != nil {
			bad("SourceConfig.TLS.Files: %v", err)
		}
		if c.TLS.ClientAuth != creds.NoClientCert && c.TLS.Files.CAFile == "" {
			bad("SourceConfig.TLS.Files.CAFile is required to verify client certificates (ClientAuth %v)", c.TLS.ClientAuth)
		}
	}
	if c.MaxBodyBytes < 0 || c.MaxRecordBytes < 0 || c.QueueRequests < 0 || c.MaxPollRecords < 0 || c.MaxWaiting < 0 {
		bad("SourceConfig limits (MaxBodyBytes, MaxRecordBytes, QueueRequests, MaxPollRecords, MaxWaiting) must be ≥ 0 (0: the default)")
	}
	return errors.Join(errs...)
}

// SinkConfig configures the HTTP sink (NewSink).
type SinkConfig struct {
	// Name is the operator's name; Inputs its inputs.
	Name   string
	Inputs []sdk.Input
	// Parallelism and KeyGroups as in sdk.Metadata.
	Parallelism, KeyGroups int
	// URL receives the batches: each a POST of JSON lines
	// (Content-Type application/x-ndjson), one record value per line.
	URL string
	// Token, when set, is sent as "Authorization: Bearer <token>".
	Token string
	// Headers are sent with every request.
	Headers map[string]string
	// TLS, when set, verifies the server against its CAFile (the
	// system's roots without) and presents CertFile/KeyFile if given.
	TLS *creds.Config
	// BatchRecords and BatchBytes bound a batch; 0 means 500 and 1 MiB.
	BatchRecords, BatchBytes int
	// RequestTimeout bounds one request; 0 means 10 s.
	RequestTimeout time.Duration
	// MaxAttempts bounds the attempts of a batch that fails with 5xx,
	// 429, 408, a time-out or a connection failure, after which Flush or
	// Commit fails with ErrDelivery (transient: it is sent again at the
	// next). 0 means 8.
	MaxAttempts int
	// DeadLetterAfter is the number of attempts answered with another
	// 4xx after which a batch's records go to the operator's dead-letter
	// stream; 0 means 3.
	DeadLetterAfter int
	// MaxInFlight bounds the batches sent at once; 0 means 4.
	MaxInFlight int
	// MinBackoff and MaxBackoff bound the delays between attempts (a
	// Retry-After answer overrides them, up to MaxBackoff); 0 means
	// 100 ms and 10 s.
	MinBackoff, MaxBackoff time.Duration
	// Stats, when set, receives the sink's counters.
	Stats *Stats
}

func (c SinkConfig) withDefaults() SinkConfig {
	def(&c.BatchRecords, DefaultBatchRecords)
	def(&c.BatchBytes, DefaultBatchBytes)
	def(&c.RequestTimeout, DefaultRequestTimeout)
	def(&c.MaxAttempts, DefaultMaxAttempts)
	def(&c.DeadLetterAfter, DefaultDeadLetterAfter)
	def(&c.MaxInFlight, DefaultMaxInFlight)
	def(&c.MinBackoff, DefaultMinBackoff)
	def(&c.MaxBackoff, DefaultMaxBackoff)
	if c.Stats == nil {
		c.Stats = new(Stats)
	}
	return c
}

// Validate names the first wrong fields of c and their fix.
func (c SinkConfig) Validate() error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: http sink: "+format, append([]any{ErrConfig}, a...)...))
	}
	if c.Name == "" || len(c.Inputs) == 0 {
		bad("SinkConfig.Name and Inputs are required")
	}
	if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad("SinkConfig.URL %q: want http://host[:port]/path or https://…", c.URL)
	}
	if c.TLS != nil {
		if err := c.TLS.Validate(); err != nil {
			bad("SinkConfig.TLS: %v", err)
		}
	}
	if c.BatchRecords < 0 || c.BatchBytes < 0 || c.MaxAttempts < 0 || c.DeadLetterAfter < 0 || c.MaxInFlight < 0 {
		bad("SinkConfig limits (BatchRecords, BatchBytes, MaxAttempts, DeadLetterAfter, MaxInFlight) must be ≥ 0 (0: the default)")
	}
	if c.MinBackoff < 0 || c.MaxBackoff < 0 || (c.MaxBackoff > 0 && c.MinBackoff > c.MaxBackoff) {
		bad("SinkConfig.MinBackoff %v and MaxBackoff %v: want 0 ≤ MinBackoff ≤ MaxBackoff", c.MinBackoff, c.MaxBackoff)
	}
	return errors.Join(errs...)
}
