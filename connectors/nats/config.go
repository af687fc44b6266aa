package nats

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/sluicehq/sluice/sdk"
)

// Defaults for zero fields.
const (
	DefaultConnectTimeout = 5 * time.Second
	DefaultPollTimeout    = 100 * time.Millisecond
	DefaultMaxPollRecords = 4096
	DefaultFlushTimeout   = 10 * time.Second
	DefaultMaxPending     = 4096
	DefaultReconnectWait  = 250 * time.Millisecond
	// DefaultMinDuplicateWindow is SinkConfig.MinDuplicateWindow's
	// default: the exactly-once sink refuses a stream whose duplicate
	// window is shorter.
	DefaultMinDuplicateWindow = time.Minute
)

// Connection says how a connector reaches NATS: its servers, TLS and
// credentials. At most one of User/Password, Token and CredsFile may be
// set; none means no authentication (development only).
type Connection struct {
	// URL is the server URL, or several separated by commas
	// ("nats://host:4222", "tls://host:4222"); required.
	URL string
	// User and Password authenticate with a user name and password.
	User, Password string
	// Token authenticates with an authorization token.
	Token string
	// CredsFile is a user credentials file (JWT and NKey seed, as
	// "nsc generate creds" writes it), for servers in operator mode.
	CredsFile string
	// TLS, when set, encrypts the connection and verifies the server's
	// certificate.
	TLS *TLS
	// ConnectTimeout bounds connecting (and each reconnect attempt);
	// 0 means 5 s.
	ConnectTimeout time.Duration
	// ReconnectWait is the time between reconnect attempts while the
	// server is down (the client reconnects for ever); 0 means 250 ms.
	ReconnectWait time.Duration
}

// TLS configures TLS to the servers. Files are PEM; they are checked by
// Validate and read when an instance connects.
type TLS struct {
	// CAFile holds the authorities that sign the servers' certificates;
	// empty means the system's roots.
	CAFile string
	// CertFile and KeyFile are the client certificate and its key, for
	// servers that verify clients (tls { verify: true }). Both or neither.
	CertFile, KeyFile string
}

// validate names the first wrong field of c, under prefix (e.g.
// "SourceConfig.Connection").
func (c Connection) validate(prefix string) error {
	if strings.TrimSpace(c.URL) == "" {
		return fmt.Errorf("nats: %s.URL is required (e.g. nats://127.0.0.1:4222)", prefix)
	}
	for _, u := range strings.Split(c.URL, ",") {
		p, err := url.Parse(strings.TrimSpace(u))
		if err != nil || p.Host == "" {
			return fmt.Errorf("nats: %s.URL %q: want nats://host:port or tls://host:port (several separated by commas)", prefix, u)
		}
		switch p.Scheme {
		case "nats", "tls", "ws", "wss":
		default:
			return fmt.Errorf("nats: %s.URL %q: unknown scheme %q: want nats, tls, ws or wss", prefix, u, p.Scheme)
		}
	}
	n := 0
	if c.User != "" || c.Password != "" {
		n++
		if c.User == "" {
			return fmt.Errorf("nats: %s.User is empty but Password is set", prefix)
		}
	}
	if c.Token != "" {
		n++
	}
	if c.CredsFile != "" {
		n++
		if err := readable(c.CredsFile); err != nil {
			return fmt.Errorf("nats: %s.CredsFile: %w", prefix, err)
		}
	}
	if n > 1 {
		return fmt.Errorf("nats: %s: set only one of User/Password, Token and CredsFile", prefix)
	}
	if c.ConnectTimeout < 0 || c.ReconnectWait < 0 {
		return fmt.Errorf("nats: %s.ConnectTimeout and ReconnectWait must not be negative", prefix)
	}
	if t := c.TLS; t != nil {
		if (t.CertFile == "") != (t.KeyFile == "") {
			return fmt.Errorf("nats: %s.TLS: give both CertFile and KeyFile or neither", prefix)
		}
		for _, f := range []struct{ name, path string }{{"CAFile", t.CAFile}, {"CertFile", t.CertFile}, {"KeyFile", t.KeyFile}} {
			if f.path == "" {
				continue
			}
			if err := readable(f.path); err != nil {
				return fmt.Errorf("nats: %s.TLS.%s: %w", prefix, f.name, err)
			}
		}
	}
	return nil
}

func (c Connection) withDefaults() Connection {
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.ReconnectWait == 0 {
		c.ReconnectWait = DefaultReconnectWait
	}
	return c
}

// readable checks that path is a file this process can read.
func readable(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	return f.Close()
}

// SourceConfig configures a JetStream source operator. Zero fields take
// the defaults above; Validate names the first field that is wrong.
type SourceConfig struct {
	// Name is the operator's name (and kind); required.
	Name string
	// Output is the Sluice stream the records are produced to; required.
	Output string
	// Connection reaches the servers; URL is required.
	Connection Connection
	// Stream is the JetStream stream read; required.
	Stream string
	// Subjects filter the stream's messages (wildcards allowed); empty
	// means all. Instance i of P reads the subjects j with j mod P = i,
	// so Parallelism may not exceed len(Subjects) (1 without subjects).
	Subjects []string
	// KeyHeader names the message header whose value is the record key;
	// empty (or a message without it) means the message's subject.
	KeyHeader string
	// Parallelism is the number of instances; 0 means 1.
	Parallelism int
	// KeyGroups is the operator's number of key groups; 0 means the
	// runtime's default.
	KeyGroups int
	// Bounded makes each instance stop (sdk.ErrEndOfStream) once it has
	// produced every message its subjects had when it first connected:
	// a backfill, or a test.
	Bounded bool
	// MaxPollRecords bounds the records of one Poll; 0 means 4096.
	MaxPollRecords int
	// PollTimeout is how long Poll waits for a first message; 0 means
	// 100 ms.
	PollTimeout time.Duration
	// Stats, when set, receives the source's counters and lag (shared by
	// its instances).
	Stats *Stats
}

// Validate checks c, naming the first wrong field.
func (c SourceConfig) Validate() error {
	if err := sdk.ValidName(c.Name); err != nil {
		return fmt.Errorf("nats: SourceConfig.Name: %w", err)
	}
	if err := sdk.ValidName(c.Output); err != nil {
		return fmt.Errorf("nats: SourceConfig.Output: %w", err)
	}
	if err := c.Connection.validate("SourceConfig.Connection"); err != nil {
		return err
	}
	if err := validStream(c.Stream); err != nil {
		return fmt.Errorf("nats: SourceConfig.Stream: %w", err)
	}
	for i, s := range c.Subjects {
		if err := validSubject(s, true); err != nil {
			return fmt.Errorf("nats: SourceConfig.Subjects[%d]: %w", i, err)
		}
	}
	if c.Parallelism < 0 || c.MaxPollRecords < 0 || c.PollTimeout < 0 || c.KeyGroups < 0 {
		return errors.New("nats: SourceConfig: Parallelism, KeyGroups, MaxPollRecords and PollTimeout must not be negative")
	}
	if limit := max(1, len(c.Subjects)); c.Parallelism > limit {
		return fmt.Errorf("nats: SourceConfig.Parallelism %d: at most one instance per subject (%d): instances split Subjects between them", c.Parallelism, limit)
	}
	return nil
}

func (c SourceConfig) withDefaults() SourceConfig {
	c.Connection = c.Connection.withDefaults()
	if c.Parallelism == 0 {
		c.Parallelism = 1
	}
	if c.MaxPollRecords == 0 {
		c.MaxPollRecords = DefaultMaxPollRecords
	}
	if c.PollTimeout == 0 {
		c.PollTimeout = DefaultPollTimeout
	}
	return c
}

// SinkConfig configures a JetStream sink operator. Zero fields take the
// defaults above; Validate names the first field that is wrong.
type SinkConfig struct {
	// Name is the operator's name (and kind); required.
	Name string
	// Inputs are the streams the sink writes. Under exactly-once they
	// may not be group-by (the records wait for the commit in the
	// instance's own key group).
	Inputs []sdk.Input
	// Connection reaches the servers; URL is required.
	Connection Connection
	// Subject is where records are published; required. With
	// SubjectFromKey it is a prefix: a record goes to "<Subject>.<key>"
	// (to Subject itself when its key is empty).
	Subject        string
	SubjectFromKey bool
	// SubjectHeader, when set, names a record header whose value, when
	// the record has it, is the subject (before SubjectFromKey).
	SubjectHeader string
	// Stream is the JetStream stream expected to capture the subjects;
	// required under exactly-once, where its duplicate window is checked
	// (MinDuplicateWindow), optional otherwise (publishes expect it when
	// set).
	Stream string
	// MinDuplicateWindow is the shortest duplicate window (the stream's
	// Duplicates) the exactly-once sink accepts: a commit repeated after
	// a recovery is de-duplicated by the server only within it, so it
	// must exceed the worst time from a checkpoint's completion to its
	// commit being repeated after a crash. 0 means 1 min.
	MinDuplicateWindow time.Duration
	// Parallelism is the number of instances; 0 means 1.
	Parallelism int
	// MaxPending bounds the publishes awaiting an ack; 0 means 4096.
	MaxPending int
	// FlushTimeout bounds the wait for acks in Flush and Commit; 0 means
	// 10 s.
	FlushTimeout time.Duration
	// Stats, when set, receives the sink's counters.
	Stats *Stats
}

// Validate checks c, naming the first wrong field.
func (c SinkConfig) Validate() error {
	if err := sdk.ValidName(c.Name); err != nil {
		return fmt.Errorf("nats: SinkConfig.Name: %w", err)
	}
	if len(c.Inputs) == 0 {
		return errors.New("nats: SinkConfig.Inputs: at least one input is required")
	}
	if err := c.Connection.validate("SinkConfig.Connection"); err != nil {
		return err
	}
	if err := validSubject(c.Subject, false); err != nil {
		return fmt.Errorf("nats: SinkConfig.Subject: %w", err)
	}
	if c.Stream != "" {
		if err := validStream(c.Stream); err != nil {
			return fmt.Errorf("nats: SinkConfig.Stream: %w", err)
		}
	}
	if c.Parallelism < 0 || c.MaxPending < 0 || c.FlushTimeout < 0 || c.MinDuplicateWindow < 0 {
		return errors.New("nats: SinkConfig: Parallelism, MaxPending, FlushTimeout and MinDuplicateWindow must not be negative")
	}
	return nil
}

// validateExactlyOnce checks what exactly-once needs besides Validate.
func (c SinkConfig) validateExactlyOnce() error {
	if c.Stream == "" {
		return errors.New("nats: SinkConfig.Stream is required under exactly-once (its duplicate window is checked)")
	}
	for i, in := range c.Inputs {
		if in.Routing == sdk.GroupBy {
			return fmt.Errorf("nats: SinkConfig.Inputs[%d] (%q): group-by is not supported under exactly-once: use shuffle or round-robin", i, in.Stream)
		}
	}
	return nil
}

func (c SinkConfig) withDefaults() SinkConfig {
	c.Connection = c.Connection.withDefaults()
	if c.Parallelism == 0 {
		c.Parallelism = 1
	}
	if c.MaxPending == 0 {
		c.MaxPending = DefaultMaxPending
	}
	if c.FlushTimeout == 0 {
		c.FlushTimeout = DefaultFlushTimeout
	}
	if c.MinDuplicateWindow == 0 {
		c.MinDuplicateWindow = DefaultMinDuplicateWindow
	}
	return c
}

// validStream checks a JetStream stream name.
func validStream(s string) error {
	if s == "" {
		return errors.New("required")
	}
	if strings.ContainsAny(s, " \t\r\n.*>/\\") {
		return fmt.Errorf("%q: a stream name may not hold spaces, '.', '*', '>', '/' or '\\'", s)
	}
	return nil
}

// validSubject checks a subject; wild allows the wildcards '*' and '>'.
func validSubject(s string, wild bool) error {
	if s == "" {
		return errors.New("required")
	}
	toks := strings.Split(s, ".")
	for i, t := range toks {
		switch {
		case t == "" || strings.ContainsAny(t, " \t\r\n"):
			return fmt.Errorf("%q: empty token or whitespace", s)
		case (t == "*" || t == ">") && !wild:
			return fmt.Errorf("%q: no wildcards here", s)
		case t == ">" && i != len(toks)-1:
			return fmt.Errorf("%q: '>' must be the last token", s)
		}
	}
	return nil
}
