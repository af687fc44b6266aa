package sdk

import (
	"errors"

	"github.com/sluicehq/sluice/actors"
	"github.com/sluicehq/sluice/internal/core"
)

// Operator is the unit of work; see the method docs for the contract.
type Operator = core.Operator

// Closer is implemented by operators that release resources on stop or
// restart.
type Closer = core.Closer

// Source is implemented by operators that create records: the runtime calls
// Poll whenever downstream has room.
type Source = core.Source

// Replayable is implemented by sources that can produce again from a
// durable position (Kafka): see core docs on at-least-once delivery.
type Replayable = core.Replayable

// Flusher is implemented by operators that buffer output outside the
// runtime (a Kafka producer); Flush runs before every state commit.
type Flusher = core.Flusher

// Factory returns a fresh Operator; it is called for every instance and
// every restart.
type Factory = core.Factory

// Context is handed to every operator callback: produce records, set timers,
// use state, read instance info and log. It is also a context.Context.
type Context = core.Context

// State is an instance's key-value store, partitioned by key group and kept
// in Pebble.
type State = core.State

// Record is one item on a stream.
type Record = core.Record

// Header is one record header.
type Header = core.Header

// Metadata describes an operator.
type Metadata = core.Metadata

// Input is a subscription to a stream with a routing.
type Input = core.Input

// Routing says which instance receives a record.
type Routing = core.Routing

// RestartPolicy says how failures are handled.
type RestartPolicy = core.RestartPolicy

// InstanceInfo describes a running instance.
type InstanceInfo = core.InstanceInfo

// MetadataError reports an invalid metadata field.
type MetadataError = core.MetadataError

// Routings.
const (
	Shuffle    = core.Shuffle
	RoundRobin = core.RoundRobin
	GroupBy    = core.GroupBy
	Broadcast  = core.Broadcast
)

// Reserved header keys the runtime sets on dead letters.
const (
	HeaderError    = core.HeaderError
	HeaderAttempts = core.HeaderAttempts
	HeaderOperator = core.HeaderOperator
	HeaderInstance = core.HeaderInstance
	HeaderStream   = core.HeaderStream
)

// Errors.
var (
	// ErrNotFound is returned by State.Get for a missing key.
	ErrNotFound = core.ErrNotFound
	// ErrUnknownStream is returned when producing to a stream that is not
	// declared (or, from outside, that nobody reads).
	ErrUnknownStream = core.ErrUnknownStream
	// ErrStopped is returned after the runtime stopped.
	ErrStopped = core.ErrStopped
	// ErrTransient, wrapped in an error from Poll or Flush, means "retry
	// later": the runtime records it and backs off instead of restarting.
	ErrTransient = core.ErrTransient
	// ErrLaunchNeedsAuth is returned by Start for Config.Launch on a node
	// whose control API requires no authentication: a launcher runs what
	// deployers name, so only authenticated admins may deploy.
	ErrLaunchNeedsAuth = errors.New("sdk: Launch needs an authenticated control API")
)

// ParseRouting parses a routing name such as "group-by".
func ParseRouting(s string) (Routing, error) { return core.ParseRouting(s) }

// DeadLetterStream returns the name of an operator's dead-letter stream,
// "<operator>.deadletter".
func DeadLetterStream(operator string) string { return core.DeadLetterStream(operator) }

// OperatorStatus describes one operator and its instances.
type OperatorStatus = actors.OperatorStatus

// InstanceStatus describes one operator instance.
type InstanceStatus = actors.InstanceStatus
