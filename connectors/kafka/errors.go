package kafka

import (
	"errors"
	"fmt"
)

// Errors of the connector. Errors that a retry may cure (brokers down) also
// wrap sdk.ErrTransient, so that the runtime records them in the
// instance's status and retries with backoff instead of restarting it.
var (
	// ErrUnavailable means the brokers could not be reached or did not
	// acknowledge in time.
	ErrUnavailable = errors.New("kafka: brokers unavailable")
	// ErrNoTopic means a topic the source reads does not exist (yet).
	ErrNoTopic = errors.New("kafka: topic does not exist")
	// ErrPartitions means a changelog topic exists with a partition count
	// other than the operator's number of key groups.
	ErrPartitions = errors.New("kafka: changelog topic has the wrong number of partitions")
	// ErrRejected means the brokers rejected records for good (too large,
	// invalid); they go to the dead-letter stream.
	ErrRejected = errors.New("kafka: records rejected by the brokers")
	// ErrAuthentication means the brokers refused the client: wrong SASL
	// credentials or mechanism, or a certificate that does not verify. It
	// is not transient: fix Security (the message names the setting).
	ErrAuthentication = errors.New("kafka: authentication failed")
	// ErrTransactionLost means an exactly-once sink's transaction can no
	// longer be committed: the brokers aborted it (it outlived
	// SinkConfig.TransactionTimeout, or another producer with the same
	// transactional id fenced it). Its records are not in the topic. An
	// open transaction lost fails the next record or PreCommit with it
	// (the instance must be restored from the last checkpoint); a pending
	// one is logged by Commit, which forgets it.
	ErrTransactionLost = errors.New("kafka: transaction lost")
	// ErrPoolExhausted means every transactional id of an exactly-once
	// sink instance holds a transaction that waits for its checkpoint to
	// complete, so the next transaction cannot begin yet. It is returned
	// wrapped with sdk.ErrTransient (see SinkConfig.TransactionPool).
	ErrPoolExhausted = errors.New("kafka: every transactional id holds a pending transaction")
)

// ConfigError reports an invalid configuration field.
type ConfigError struct {
	Operator string // the operator's name, or "state log"
	Field    string // e.g. "Brokers" or "Topics[1]"
	Problem  string // what is wrong and what is allowed
}

// Error returns e.g. `kafka "in": Brokers: must list at least one broker as host:port`.
func (e *ConfigError) Error() string {
	return fmt.Sprintf("kafka %q: %s: %s", e.Operator, e.Field, e.Problem)
}
