package mesos

import (
	"errors"
	"fmt"
)

// Errors returned by the scheduler. Callers branch on them with errors.Is.
var (
	// ErrRunning is returned by Run when the scheduler is already running.
	ErrRunning = errors.New("mesos: scheduler already running")
	// ErrNotLeader is returned (wrapped) when a write to Consul is refused
	// because this scheduler no longer holds the leader lock: another
	// scheduler has taken over.
	ErrNotLeader = errors.New("mesos: not the leader")
	// ErrNoMaster is returned (wrapped) when a leader stepped down because
	// it could not subscribe to any master for Config.MasterTimeout.
	ErrNoMaster = errors.New("mesos: no master reachable")
)

// ConfigError reports an invalid field of a Config or a Pool, naming the
// field and what to do about it.
type ConfigError struct {
	// Field is the field's path, e.g. "Master" or "pools[2].cpus".
	Field string
	// Problem says what is wrong and how to fix it.
	Problem string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("mesos: invalid %s: %s", e.Field, e.Problem)
}

func fieldErr(field, format string, args ...any) error {
	return &ConfigError{Field: field, Problem: fmt.Sprintf(format, args...)}
}
