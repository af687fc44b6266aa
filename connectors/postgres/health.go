package postgres

import (
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sluicehq/sluice/internal/pgerr"
	"github.com/sluicehq/sluice/internal/sinkhealth"
	"github.com/sluicehq/sluice/sdk"
)

// Metrics counts what the instances of a sink sharing it do, and whether
// the server is reachable. Set SinkConfig.Metrics to read them (a
// dashboard, a test). Safe for concurrent use. Rows counts the rows
// written and committed, Bytes the bytes of their records, Errors the
// failed writes (each retried), DownSince since when some instance cannot
// reach the server, LastError the last failed write.
type Metrics struct {
	sinkhealth.Counters
}

// Down returns, while some instance cannot reach the server, an error
// wrapping ErrUnavailable that says since when and why; nil otherwise.
func (m *Metrics) Down() error { return m.Outage(ErrUnavailable) }

// health tracks one instance's connection to the server and reports it to
// its Metrics (a private one when the config has none). Used on the
// instance's goroutine; Metrics is read from anywhere.
type health struct {
	i    *sinkhealth.Instance
	what string // "postgres sink \"out\""
}

func newHealth(m *Metrics, what string) *health {
	if m == nil {
		m = new(Metrics)
	}
	return &health{i: sinkhealth.NewInstance(&m.Counters), what: what}
}

// ok records a successful write of rows rows of n bytes.
func (h *health) ok(rows, n int) {
	h.i.Wrote(rows, n)
	h.i.Up()
}

// up records that the server answered.
func (h *health) up() { h.i.Up() }

// close forgets the instance's outage (it stops).
func (h *health) close() { h.i.Close() }

// failure records err, the failure of doing what, and returns what to
// report: an error wrapping ErrRefused when the server refuses the sink (a
// retry will not cure it), else one wrapping sdk.ErrTransient (and
// ErrUnavailable, naming the outage, when the server cannot be reached).
func (h *health) failure(doing string, err error) error {
	r := refusal(err)
	unreachable := r == nil && pgerr.Unreachable(err)
	down := h.i.Failed(err, unreachable)
	switch {
	case r != nil:
		return fmt.Errorf("%s: %s: %w", h.what, doing, r)
	case !unreachable:
		return fmt.Errorf("%s: %s: %w: %w", h.what, doing, sdk.ErrTransient, err)
	}
	return fmt.Errorf("%s: %s: %w: %w for %v: %w", h.what, doing, sdk.ErrTransient, ErrUnavailable,
		down.Round(100*time.Millisecond), err)
}

// sinkHints are the refusals of the sink and the settings they name.
var sinkHints = map[string]string{
	"28P01": "check URL (user, password) and the server's pg_hba.conf",
	"28000": "check URL (user, password) and the server's pg_hba.conf",
	"3D000": "check URL (the database name)",
	"42P01": "check Table (it must exist)",
	"3F000": "check Table (it must exist)",
	"42703": "check Columns and KeyColumns against the table",
	"42P10": "check KeyColumns: a unique index or constraint on exactly them must exist",
	"42501": "grant the URL's user the privileges (INSERT, UPDATE for upserts; CREATE for the progress table)",
}

// refusal classifies err: an error wrapping ErrRefused naming the setting
// to check when the server refuses the sink for good, nil otherwise.
func refusal(err error) error {
	if r := pgerr.Refusal(err, ErrRefused, sinkHints); r != nil {
		return r
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return nil
	}
	if class := pe.Code[:min(2, len(pe.Code))]; class == "22" || class == "23" || class == "42" {
		// Data (22), integrity (23) and syntax/access (42): the rows or the
		// table do not fit; a retry gives the same answer.
		return fmt.Errorf("%w: %s (SQLSTATE %s); check Columns, Map and the table's definition", ErrRefused, pe.Message, pe.Code)
	}
	return nil
}
