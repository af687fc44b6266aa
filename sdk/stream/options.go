package stream

import (
	"time"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/window"
)

// Option sets something of the operator a stage runs in, or of a window.
// A stage that chains to the operator of the stage before it may only
// repeat what that operator has: one that sets another parallelism, key
// groups or restart policy starts an operator of its own (see the
// package doc).
type Option func(*options)

type options struct {
	parallelism, keyGroups int
	restart                *sdk.RestartPolicy
	unchained              bool
	lateness               time.Duration
	emit                   window.Emit
	windowOnly             []string // the window options set, by name
}

// Parallelism sets the number of instances of the stage's operator (0:
// one); a manifest or `sluice scale` may change it once deployed.
func Parallelism(n int) Option { return func(o *options) { o.parallelism = n } }

// KeyGroups sets the number of key groups of the stage's operator (see
// sdk.Metadata.KeyGroups): for Aggregate and Process, which keep state by
// key.
func KeyGroups(n int) Option { return func(o *options) { o.keyGroups = n } }

// Restart sets the restart policy of the stage's operator (see
// sdk.RestartPolicy; DeadLetterAfter says how many failed attempts send a
// record to the dead letters).
func Restart(p sdk.RestartPolicy) Option { return func(o *options) { o.restart = &p } }

// Unchained makes the stage start an operator of its own even where it
// could chain to the one before it: to scale it on its own, or to see its
// records on a stream ("<pipeline>.<stage before>").
func Unchained() Option { return func(o *options) { o.unchained = true } }

// Lateness sets how long after a window's end late values still update
// it (window.Config.Lateness); for Aggregate only.
func Lateness(d time.Duration) Option {
	return func(o *options) { o.lateness, o.windowOnly = d, append(o.windowOnly, "Lateness") }
}

// Emit sets when a window's result is produced (window.Config.Emit:
// window.OnClose, the default, or window.OnUpdate); for Aggregate only.
func Emit(e window.Emit) Option {
	return func(o *options) { o.emit, o.windowOnly = e, append(o.windowOnly, "Emit") }
}

// problem says what is wrong with the options of a stage of kind k, or "".
func (o options) problem(k kind) string {
	if k != kindAggregate && len(o.windowOnly) > 0 {
		return "option " + o.windowOnly[0] + " is for Aggregate only"
	}
	return ""
}
