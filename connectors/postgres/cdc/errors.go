package cdc

import "errors"

// Errors of the package. Callers branch on them with errors.Is.
var (
	// ErrConfig is wrapped by every error of SourceConfig.Validate (a
	// *ConfigError, naming the field).
	ErrConfig = errors.New("postgres cdc: bad configuration")
	// ErrUnavailable is wrapped (with sdk.ErrTransient) while the server
	// cannot be reached: the Poll is retried.
	ErrUnavailable = errors.New("postgres cdc: server unavailable")
	// ErrRefused is wrapped when the server refuses the source for a
	// reason a retry will not cure: wal_level is not logical, the slot or
	// the publication is missing (and not to be created), the slot is not
	// a pgoutput slot, wrong credentials, no REPLICATION privilege. The
	// error names the setting to fix.
	ErrRefused = errors.New("postgres cdc: refused")
	// ErrProtocol is wrapped when the replication stream holds what the
	// source cannot decode (a change of a relation it was not told of).
	ErrProtocol = errors.New("postgres cdc: unexpected replication message")
)

// ConfigError is a bad SourceConfig field: what Validate returns.
type ConfigError struct {
	Field  string // the field, e.g. "Slot"
	Reason string // what is wrong and how to fix it
}

// Error implements error.
func (e *ConfigError) Error() string { return "postgres cdc: " + e.Field + ": " + e.Reason }

// Unwrap makes a ConfigError match ErrConfig.
func (e *ConfigError) Unwrap() error { return ErrConfig }
