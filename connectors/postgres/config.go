package postgres

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sluicehq/sluice/sdk"
)

// MapFunc turns a record into the values of SinkConfig.Columns, in that
// order (any type pgx encodes into the column's type). An error sends the
// record to the dead-letter stream. It must be deterministic: under
// exactly-once a record may be mapped again after a restore.
type MapFunc func(sdk.Record) ([]any, error)

// SinkConfig configures a PostgreSQL sink. Zero fields take the defaults
// documented on them (DefaultSinkConfig fills them in).
type SinkConfig struct {
	// Name is the operator's name; required.
	Name string
	// Inputs are the streams the sink reads; required. Under exactly-once
	// none may be routed group-by (rows wait in the instance's first key
	// group; see the package documentation).
	Inputs []sdk.Input
	// Parallelism is the number of instances; 0 means 1. Upserts of one
	// key from several instances race: keep 1, or route group-by under the
	// other guarantees.
	Parallelism int
	// KeyGroups is the operator's number of key groups; 0 is the
	// runtime's default.
	KeyGroups int

	// URL is the connection string, a URL
	// ("postgres://user:password@host:5432/db?sslmode=verify-full") or
	// key=value pairs, as pgx (libpq) reads them; required.
	URL string
	// TLS, when set, overrides the URL's sslmode, sslrootcert, sslcert and
	// sslkey.
	TLS TLSConfig
	// Table is the table written, "name" or "schema.name"; required. It
	// must exist.
	Table string
	// Columns are the columns written, in the order Map returns values;
	// required.
	Columns []string
	// KeyColumns, when set, make the sink upsert: INSERT … ON CONFLICT
	// (KeyColumns) DO UPDATE SET every other column; a unique index or
	// constraint on exactly these columns must exist. Each must be one of
	// Columns. Empty: plain inserts.
	KeyColumns []string
	// Map turns a record into the row's values; nil means MapJSON: the
	// record's value is a JSON object whose fields named like Columns give
	// the values.
	Map MapFunc

	// BatchRows is the number of rows written at once (one COPY); 0 means
	// 5000.
	BatchRows int
	// MaxBufferedRows bounds the rows held while the server is down
	// (at-least-once and none); beyond it ProcessRecord waits for the
	// server. 0 means 100,000.
	MaxBufferedRows int
	// WriteTimeout bounds one write (connect, COPY, commit); 0 means 10 s.
	WriteTimeout time.Duration
	// CloseTimeout bounds Close's last write; 0 means 10 s.
	CloseTimeout time.Duration
	// ProgressTable is the table where exactly-once sinks record the last
	// checkpoint each has committed, created if missing; "" means
	// "sluice_progress". Schema-qualify it like Table if needed.
	ProgressTable string
	// Metrics, when set, counts what every instance of the sink does
	// (rows, bytes, errors) and shows an outage while it lasts.
	Metrics *Metrics
}

// TLSConfig sets the server connection's TLS with libpq's settings. Empty
// fields leave the URL's.
type TLSConfig struct {
	// Mode is sslmode: disable, allow, prefer, require, verify-ca or
	// verify-full (checks the server's name too; use it with RootCert).
	Mode string
	// RootCert is sslrootcert: the PEM file of the CA that signs the
	// server's certificate.
	RootCert string
	// Cert and Key are sslcert and sslkey: a client certificate and its
	// key (PEM files), for servers that authenticate clients by
	// certificate; both or neither.
	Cert, Key string
}

// DefaultSinkConfig returns cfg with its zero fields set to their
// defaults.
func DefaultSinkConfig(cfg SinkConfig) SinkConfig {
	if cfg.Parallelism == 0 {
		cfg.Parallelism = 1
	}
	if cfg.BatchRows == 0 {
		cfg.BatchRows = 5000
	}
	if cfg.MaxBufferedRows == 0 {
		cfg.MaxBufferedRows = 100_000
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = 10 * time.Second
	}
	if cfg.CloseTimeout == 0 {
		cfg.CloseTimeout = 10 * time.Second
	}
	if cfg.ProgressTable == "" {
		cfg.ProgressTable = "sluice_progress"
	}
	return cfg
}

var sslModes = []string{"disable", "allow", "prefer", "require", "verify-ca", "verify-full"}

// Validate checks cfg without contacting the server; the error is a
// *ConfigError naming the field.
func (c SinkConfig) Validate() error {
	bad := func(field, format string, args ...any) error {
		return &ConfigError{Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case c.Name == "":
		return bad("Name", "required")
	case len(c.Inputs) == 0:
		return bad("Inputs", "must name at least one stream")
	case c.Parallelism < 0:
		return bad("Parallelism", "%d is negative", c.Parallelism)
	case c.URL == "":
		return bad("URL", `required, e.g. "postgres://user:password@host:5432/db?sslmode=verify-full"`)
	case c.BatchRows < 0:
		return bad("BatchRows", "%d is negative", c.BatchRows)
	case c.MaxBufferedRows < 0:
		return bad("MaxBufferedRows", "%d is negative", c.MaxBufferedRows)
	case c.MaxBufferedRows > 0 && c.MaxBufferedRows < c.BatchRows:
		return bad("MaxBufferedRows", "%d is less than BatchRows %d", c.MaxBufferedRows, c.BatchRows)
	case c.WriteTimeout < 0:
		return bad("WriteTimeout", "%v is negative", c.WriteTimeout)
	case c.CloseTimeout < 0:
		return bad("CloseTimeout", "%v is negative", c.CloseTimeout)
	}
	for i, in := range c.Inputs {
		if in.Stream == "" {
			return bad(fmt.Sprintf("Inputs[%d].Stream", i), "required")
		}
	}
	if _, err := c.connConfig(); err != nil {
		return err
	}
	if _, err := parseTable(c.Table); err != nil {
		return bad("Table", "%v", err)
	}
	if c.ProgressTable != "" {
		if _, err := parseTable(c.ProgressTable); err != nil {
			return bad("ProgressTable", "%v", err)
		}
	}
	if len(c.Columns) == 0 {
		return bad("Columns", "must name at least one column")
	}
	for i, col := range c.Columns {
		if col == "" {
			return bad(fmt.Sprintf("Columns[%d]", i), "empty")
		}
		if slices.Index(c.Columns, col) != i {
			return bad(fmt.Sprintf("Columns[%d]", i), "%q is named twice", col)
		}
	}
	for i, k := range c.KeyColumns {
		if !slices.Contains(c.Columns, k) {
			return bad(fmt.Sprintf("KeyColumns[%d]", i), "%q is not one of Columns %v", k, c.Columns)
		}
		if slices.Index(c.KeyColumns, k) != i {
			return bad(fmt.Sprintf("KeyColumns[%d]", i), "%q is named twice", k)
		}
	}
	return nil
}

// connConfig parses URL with TLS applied; the error names the field.
func (c SinkConfig) connConfig() (*pgconn.Config, error) {
	s := c.URL
	t := c.TLS
	if t.Mode != "" && !slices.Contains(sslModes, t.Mode) {
		return nil, &ConfigError{Field: "TLS.Mode", Reason: fmt.Sprintf("%q is none of %s", t.Mode, strings.Join(sslModes, ", "))}
	}
	if (t.Cert == "") != (t.Key == "") {
		return nil, &ConfigError{Field: "TLS.Cert", Reason: "TLS.Cert and TLS.Key go together: set both or neither"}
	}
	if extra := t.params(); extra != "" {
		if strings.Contains(s, "://") {
			sep := "?"
			if strings.Contains(s, "?") {
				sep = "&"
			}
			s += sep + extra
		} else {
			s += " " + strings.ReplaceAll(extra, "&", " ")
		}
	}
	cfg, err := pgconn.ParseConfig(s)
	if err != nil {
		field := "URL"
		if t.params() != "" {
			field = "URL (with TLS)"
		}
		return nil, &ConfigError{Field: field, Reason: redact(err.Error(), cfgPassword(c.URL))}
	}
	return cfg, nil
}

// params returns the libpq settings of t as URL query parameters.
func (t TLSConfig) params() string {
	q := url.Values{}
	for k, v := range map[string]string{"sslmode": t.Mode, "sslrootcert": t.RootCert, "sslcert": t.Cert, "sslkey": t.Key} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return q.Encode()
}

// cfgPassword returns the password in a URL, to keep it out of messages.
func cfgPassword(s string) string {
	if u, err := url.Parse(s); err == nil && u.User != nil {
		p, _ := u.User.Password()
		return p
	}
	return ""
}

func redact(msg, secret string) string {
	if secret == "" {
		return msg
	}
	return strings.ReplaceAll(msg, secret, "xxxxx")
}

// parseTable splits "schema.name" or "name" into its identifiers.
func parseTable(s string) ([]string, error) {
	if s == "" {
		return nil, fmt.Errorf(`required, e.g. "counts" or "public.counts"`)
	}
	parts := strings.Split(s, ".")
	if len(parts) > 2 {
		return nil, fmt.Errorf("%q: want name or schema.name", s)
	}
	for _, p := range parts {
		if p == "" {
			return nil, fmt.Errorf("%q: empty name", s)
		}
	}
	return parts, nil
}
