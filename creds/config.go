package creds

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// DefaultPollInterval is how often a watched Source or Tokens rereads its
// files when no file system event came (a fallback for file systems
// without events, such as some network mounts).
const DefaultPollInterval = time.Minute

// Config names the PEM files of a Source. Zero durations and a nil Logger
// take the defaults of DefaultConfig.
type Config struct {
	// CAFile is a PEM bundle of CA certificates: the peer's certificate
	// must be signed by one of them. Empty: a client verifies servers
	// against the system's CAs, and a server cannot verify clients.
	CAFile string
	// CertFile is this side's PEM certificate, followed by any
	// intermediates; KeyFile its PEM private key. Both or neither.
	CertFile, KeyFile string
	// PollInterval is how often Watch rereads the files besides file
	// system events; 0 means DefaultPollInterval.
	PollInterval time.Duration
	// Logger receives reloads and failed reloads; nil means slog.Default().
	Logger *slog.Logger
}

// DefaultConfig returns a Config with every default set and no files.
func DefaultConfig() Config {
	return Config{PollInterval: DefaultPollInterval, Logger: slog.Default()}
}

// Enabled reports whether c names any file.
func (c Config) Enabled() bool { return c.CAFile != "" || c.CertFile != "" || c.KeyFile != "" }

// withDefaults fills in zero fields.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.PollInterval == 0 {
		c.PollInterval = d.PollInterval
	}
	if c.Logger == nil {
		c.Logger = d.Logger
	}
	return c
}

// Validate checks c without reading the files: every problem names the
// field and the fix.
func (c Config) Validate() error {
	var errs []error
	if (c.CertFile == "") != (c.KeyFile == "") {
		errs = append(errs, errors.New("creds: CertFile and KeyFile go together: give both the certificate and its private key, or neither"))
	}
	if !c.Enabled() {
		errs = append(errs, errors.New("creds: no file given: set CAFile, or CertFile and KeyFile"))
	}
	if c.PollInterval < 0 {
		errs = append(errs, fmt.Errorf("creds: PollInterval must be ≥ 0 (0: %v), got %v", DefaultPollInterval, c.PollInterval))
	}
	return errors.Join(errs...)
}
