package cassandra

import "errors"

// Errors of the package. Callers branch on them with errors.Is.
var (
	// ErrConfig is wrapped by every error of SinkConfig.Validate (a
	// *ConfigError, naming the field).
	ErrConfig = errors.New("cassandra: bad configuration")
	// ErrUnavailable is wrapped (with sdk.ErrTransient) while no host of
	// the cluster can be reached, or the coordinator answers that too few
	// replicas are alive: the write is retried.
	ErrUnavailable = errors.New("cassandra: cluster unavailable")
	// ErrRefused is wrapped when the cluster refuses the sink for a reason
	// a retry will not cure: bad credentials or certificate, no such
	// keyspace, table or column, a primary key column missing from
	// Columns, a value the table does not take. The error names the
	// setting to fix.
	ErrRefused = errors.New("cassandra: refused")
)

// ConfigError is a bad SinkConfig field: what Validate returns.
type ConfigError struct {
	Field  string // the field, e.g. "Columns[1]"
	Reason string // what is wrong and how to fix it
}

// Error implements error.
func (e *ConfigError) Error() string { return "cassandra sink: " + e.Field + ": " + e.Reason }

// Unwrap makes a ConfigError match ErrConfig.
func (e *ConfigError) Unwrap() error { return ErrConfig }
