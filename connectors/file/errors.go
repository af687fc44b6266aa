package file

import (
	"errors"
	"fmt"
)

// Errors of the connector.
var (
	// ErrTruncated means a source's file is shorter than the offset the
	// source stored: the file was truncated or replaced since it was read.
	// The source does not guess where to resume; purge the operator's state
	// (sluice kill --purge) to read the file again from its start.
	ErrTruncated = errors.New("file: file is shorter than the stored offset")
	// ErrLineTooLong is the error in the dead letter of a line longer than
	// SourceConfig.MaxLineSize.
	ErrLineTooLong = errors.New("file: line longer than MaxLineSize")
	// ErrStdinStopped means a source reading stdin was started again after
	// the runtime that read it stopped: a process reads stdin once.
	ErrStdinStopped = errors.New("file: stdin was read by a runtime that stopped")
	// ErrNotResumable means a source or sink that cannot take part in
	// exactly-once processing was started under it: stdin cannot be read
	// again, stdout cannot take lines back.
	ErrNotResumable = errors.New("file: stdin and stdout cannot take part in exactly-once processing")
)

// ConfigError reports an invalid configuration field.
type ConfigError struct {
	Kind     string // "source" or "sink"
	Operator string // the operator's name, possibly empty
	Field    string // e.g. "Path"
	Problem  string // what is wrong and what is allowed
}

// Error returns e.g. `file source "lines": Path: is required: …`.
func (e *ConfigError) Error() string {
	if e.Operator == "" {
		return fmt.Sprintf("file %s: %s: %s", e.Kind, e.Field, e.Problem)
	}
	return fmt.Sprintf("file %s %q: %s: %s", e.Kind, e.Operator, e.Field, e.Problem)
}
