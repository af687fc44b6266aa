// Package pgerr classifies the errors of pgx (pgconn) connections for the
// PostgreSQL connectors: a server that cannot be reached (retry, report
// an outage) against one that answered with a refusal a retry will not
// cure (name the setting to fix).
package pgerr

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/jackc/pgx/v5/pgconn"
)

// Unreachable reports whether err means the server could not be reached
// or stopped answering (rather than answering with an error): network
// errors, timeouts, a connection closed, and the server shutting down,
// starting, or out of connections. A refusal (see Refusal) is not.
func Unreachable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03" || pe.Code == "53300"
	}
	var ne net.Error
	var ce *pgconn.ConnectError
	return errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err) || pgconn.SafeToRetry(err) ||
		errors.Is(err, net.ErrClosed) || errors.As(err, &ce)
}

// Refusal returns, when err is a server error whose SQLSTATE hints holds,
// an error wrapping refused that gives the server's message, the code and
// the hint (the setting to check); nil otherwise.
func Refusal(err, refused error, hints map[string]string) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return nil
	}
	hint, ok := hints[pe.Code]
	if !ok {
		return nil
	}
	return fmt.Errorf("%w: %s (SQLSTATE %s); %s", refused, pe.Message, pe.Code, hint)
}
