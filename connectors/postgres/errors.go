package postgres

import "errors"

// Errors of the package. Callers branch on them with errors.Is.
var (
	// ErrConfig is wrapped by every error of SinkConfig.Validate (a
	// *ConfigError, naming the field).
	ErrConfig = errors.New("postgres: bad configuration")
	// ErrUnavailable is wrapped (with sdk.ErrTransient) while the server
	// cannot be reached: the write is retried.
	ErrUnavailable = errors.New("postgres: server unavailable")
	// ErrRefused is wrapped when the server refuses the sink for a reason
	// a retry will not cure: wrong password, no such database, table or
	// column, no unique index on KeyColumns, no privilege. The error
	// names the setting to fix.
	ErrRefused = errors.New("postgres: refused")
)

// ConfigError is a bad SinkConfig field: what Validate returns.
type ConfigError struct {
	Field  string // the field, e.g. "KeyColumns[1]"
	Reason string // what is wrong and how to fix it
}

// Error implements error.
func (e *ConfigError) Error() string { return "postgres sink: " + e.Field + ": " + e.Reason }

// Unwrap makes a ConfigError match ErrConfig.
func (e *ConfigError) Unwrap() error { return ErrConfig }
