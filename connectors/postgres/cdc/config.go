package cdc

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sluicehq/sluice/sdk"
)

// SourceConfig configures a change-data-capture source. Zero fields take
// the defaults documented on them.
type SourceConfig struct {
	// Name is the operator's name; required.
	Name string
	// Output is the stream the changes go to; required.
	Output string
	// KeyGroups is the operator's number of key groups; 0 is the runtime's
	// default. The source has one instance (a slot has one reader): a
	// manifest that scales it up gets instances that idle.
	KeyGroups int
	// Watermarks is the source's watermark strategy (event time is the
	// commit time); nil: none.
	Watermarks *sdk.WatermarkStrategy

	// URL is the connection string, a URL
	// ("postgres://user:password@host:5432/db?sslmode=verify-full") or
	// key=value pairs, as pgx (libpq) reads them; required. TLS and
	// authentication are libpq's settings in it (sslmode, sslrootcert,
	// sslcert, sslkey, password). The user needs the REPLICATION
	// attribute (and, to create the publication, ownership of the
	// tables or superuser). The source adds replication=database.
	URL string
	// Slot is the logical replication slot the source reads and
	// advances: lower-case letters, digits and underscores; required.
	Slot string
	// CreateSlot creates Slot (with the pgoutput plugin) when it does not
	// exist; otherwise a missing slot is refused.
	CreateSlot bool
	// Publication is the publication whose tables the slot's changes are
	// filtered by (pgoutput's publication_names): lower-case letters,
	// digits and underscores; required.
	Publication string
	// CreatePublication creates Publication when it does not exist: FOR
	// TABLE Tables, or FOR ALL TABLES when Tables is empty; otherwise a
	// missing publication is refused.
	CreatePublication bool
	// Tables are the tables ("name" or "schema.name") of a publication
	// the source creates; only with CreatePublication.
	Tables []string

	// PollTimeout bounds how long a Poll waits for a transaction; 0 means
	// 100 ms.
	PollTimeout time.Duration
	// MaxPollChanges ends a Poll once the transactions it produced hold
	// this many changes (a transaction is never split); 0 means 10,000.
	MaxPollChanges int
	// ConnectTimeout bounds connecting, checking the server and starting
	// replication; 0 means 10 s.
	ConnectTimeout time.Duration
	// StatusInterval is how often the source tells the server its
	// confirmed position when nothing else made it (the server drops a
	// silent client after wal_sender_timeout, 60 s by default); 0 means
	// 10 s.
	StatusInterval time.Duration
	// Stats, when set, counts what the source does and shows an outage
	// while it lasts.
	Stats *Stats
}

func (c SourceConfig) withDefaults() SourceConfig {
	if c.PollTimeout == 0 {
		c.PollTimeout = 100 * time.Millisecond
	}
	if c.MaxPollChanges == 0 {
		c.MaxPollChanges = 10_000
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = 10 * time.Second
	}
	if c.StatusInterval == 0 {
		c.StatusInterval = 10 * time.Second
	}
	if c.Stats == nil {
		c.Stats = new(Stats)
	}
	return c
}

// name is what slot and publication names may be: PostgreSQL's rule for
// slots (lower-case letters, digits, underscores, at most 63 bytes), also
// asked of publications so that neither needs quoting.
var name = regexp.MustCompile(`^[a-z0-9_]{1,63}$`)

// Validate checks cfg without contacting the server; the error is a
// *ConfigError naming the field.
func (c SourceConfig) Validate() error {
	bad := func(field, format string, args ...any) error {
		return &ConfigError{Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case c.Name == "":
		return bad("Name", "required")
	case c.Output == "":
		return bad("Output", "required: the stream the changes go to")
	case c.URL == "":
		return bad("URL", `required, e.g. "postgres://user:password@host:5432/db?sslmode=verify-full"`)
	case c.Slot == "":
		return bad("Slot", `required: the logical replication slot, e.g. "sluice_orders" (set CreateSlot to create it)`)
	case !name.MatchString(c.Slot):
		return bad("Slot", "%q: use 1 to 63 lower-case letters, digits and underscores", c.Slot)
	case c.Publication == "":
		return bad("Publication", `required: the publication naming the tables, e.g. "sluice_orders" (set CreatePublication to create it)`)
	case !name.MatchString(c.Publication):
		return bad("Publication", "%q: use 1 to 63 lower-case letters, digits and underscores", c.Publication)
	case len(c.Tables) > 0 && !c.CreatePublication:
		return bad("Tables", "only used to create the publication: set CreatePublication, or add the tables to publication %q yourself", c.Publication)
	case c.PollTimeout < 0:
		return bad("PollTimeout", "%v is negative", c.PollTimeout)
	case c.MaxPollChanges < 0:
		return bad("MaxPollChanges", "%d is negative", c.MaxPollChanges)
	case c.ConnectTimeout < 0:
		return bad("ConnectTimeout", "%v is negative", c.ConnectTimeout)
	case c.StatusInterval < 0:
		return bad("StatusInterval", "%v is negative", c.StatusInterval)
	}
	for i, t := range c.Tables {
		if _, err := splitTable(t); err != nil {
			return bad(fmt.Sprintf("Tables[%d]", i), "%v", err)
		}
	}
	if _, err := c.connConfig(); err != nil {
		return err
	}
	return nil
}

// connConfig parses URL for a replication connection; the error names
// the field (without the password).
func (c SourceConfig) connConfig() (*pgconn.Config, error) {
	cfg, err := pgconn.ParseConfig(c.URL)
	if err != nil {
		msg := err.Error()
		if p := password(c.URL); p != "" {
			msg = strings.ReplaceAll(msg, p, "xxxxx")
		}
		return nil, &ConfigError{Field: "URL", Reason: msg}
	}
	cfg.RuntimeParams["replication"] = "database"
	cfg.RuntimeParams["application_name"] = "sluice-cdc-" + c.Slot
	return cfg, nil
}

// password returns the password in a URL or key=value string.
func password(s string) string {
	if cfg, err := pgconn.ParseConfig(s); err == nil {
		return cfg.Password
	}
	if _, after, ok := strings.Cut(s, "://"); ok {
		if creds, _, ok := strings.Cut(after, "@"); ok {
			if _, p, ok := strings.Cut(creds, ":"); ok {
				return p
			}
		}
	}
	return ""
}

// splitTable splits "schema.name" or "name" into its identifiers.
func splitTable(s string) ([]string, error) {
	parts := strings.Split(s, ".")
	switch {
	case s == "":
		return nil, fmt.Errorf(`empty: want "name" or "schema.name"`)
	case len(parts) > 2:
		return nil, fmt.Errorf("%q: want name or schema.name", s)
	}
	for _, p := range parts {
		if p == "" {
			return nil, fmt.Errorf("%q: empty name", s)
		}
	}
	return parts, nil
}
