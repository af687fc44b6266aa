package cassandra

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/gocql/gocql"

	"github.com/sluicehq/sluice/sdk"
)

// failKind is how a failed request is reported.
type failKind int

const (
	// passing: the cluster answered with an error a retry may cure (a
	// write timeout, an overloaded coordinator).
	passing failKind = iota
	// unreachable: no host answered, or too few replicas are alive.
	unreachable
	// refused: a retry gets the same answer; hint names the setting.
	refused
)

// failure is a classified error.
type failure struct {
	kind failKind
	hint string // refused and unreachable: what to check
}

// wrap returns err, the failure of doing, as f says it: wrapping
// ErrRefused, or sdk.ErrTransient (and ErrUnavailable, with how long the
// outage has lasted).
func (f failure) wrap(doing string, err error, outage time.Duration) error {
	switch f.kind {
	case refused:
		return fmt.Errorf("%s: %w: %v; %s", doing, ErrRefused, err, f.hint)
	case unreachable:
		return fmt.Errorf("%s: %w: %w for %v (%s): %w", doing, sdk.ErrTransient, ErrUnavailable,
			outage.Round(100*time.Millisecond), f.hint, err)
	}
	return fmt.Errorf("%s: %w: %w", doing, sdk.ErrTransient, err)
}

// invalidHints are the hints of Invalid (0x2200) answers by their
// message, as Cassandra words them.
var invalidHints = []struct{ text, hint string }{
	{"unconfigured table", "check Keyspace and Table (the table must exist)"},
	{"does not exist", "check Keyspace (it must exist)"},
	{"Undefined column name", "check Columns against the table"},
	{"primary key parts are missing", "check Columns: they must include every primary key column"},
	{"Invalid null value", "check Map: primary key columns may not be null"},
	{"Key may not be empty", "check Map: the partition key may not be empty"},
	{"counter", "the table has counter columns, which INSERT cannot write"},
}

// classify says how err is reported.
func classify(err error) failure {
	var rf *refusalError
	if errors.As(err, &rf) {
		return failure{refused, rf.hint}
	}
	var re gocql.RequestError
	if errors.As(err, &re) {
		switch re.Code() {
		case gocql.ErrCodeCredentials:
			return failure{refused, "check Username and Password"}
		case gocql.ErrCodeUnauthorized:
			return failure{refused, "grant Username MODIFY on the table and SELECT on system_schema"}
		case gocql.ErrCodeUnavailable:
			return failure{unreachable, "too few replicas alive for Consistency"}
		case gocql.ErrCodeInvalid:
			for _, h := range invalidHints {
				if strings.Contains(re.Message(), h.text) {
					return failure{refused, h.hint}
				}
			}
			return failure{refused, "check Columns, Map and the table's definition"}
		case gocql.ErrCodeSyntax, gocql.ErrCodeConfig, gocql.ErrCodeAlreadyExists, gocql.ErrCodeProtocol:
			return failure{refused, "check Keyspace, Table and Columns"}
		}
		return failure{kind: passing}
	}
	var me gocql.MarshalError
	if errors.As(err, &me) {
		return failure{refused, "check Map: a value does not fit its column's type"}
	}
	var ue gocql.UnmarshalError
	if errors.As(err, &ue) {
		return failure{refused, "the table's schema is not what the sink reads"}
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "password are incorrect"), strings.Contains(msg, "authentication required"),
		strings.Contains(msg, "Bad credentials"), strings.Contains(msg, "unexpected authenticator"):
		return failure{refused, "check Username and Password"}
	case strings.Contains(msg, "x509:"), strings.Contains(msg, "tls:"), strings.Contains(msg, "certificate"):
		return failure{refused, "check TLS (CAFile, ServerName, CertFile): the TLS handshake failed"}
	}
	if unreachableErr(err) {
		return failure{unreachable, "check Hosts, Port and TLS; the cluster may be down"}
	}
	return failure{kind: passing}
}

// unreachableTexts are the words of the driver's errors, which it often
// flattens to text (session creation), of a cluster that does not answer.
var unreachableTexts = []string{"unable to connect", "unable to create session", "no hosts available",
	"connection refused", "i/o timeout", "EOF", "connection reset", "connection closed", "no response received"}

// unreachableErr reports the errors of a cluster that does not answer.
func unreachableErr(err error) bool {
	var ne net.Error
	if errors.Is(err, gocql.ErrNoConnections) || errors.Is(err, gocql.ErrConnectionClosed) ||
		errors.Is(err, gocql.ErrTimeoutNoResponse) || errors.Is(err, gocql.ErrNoStreams) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &ne) {
		return true
	}
	msg := err.Error()
	for _, t := range unreachableTexts {
		if strings.Contains(msg, t) {
			return true
		}
	}
	return false
}
