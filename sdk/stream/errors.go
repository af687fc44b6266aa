package stream

import (
	"errors"
	"fmt"
)

// Errors a StageError wraps (Build's, for errors.Is).
var (
	// ErrEmpty is returned by Build for a pipeline without stages.
	ErrEmpty = errors.New("stream: pipeline has no stages")
	// ErrUnconsumed is wrapped by the StageError of a stage whose output
	// no later stage, To or Output takes.
	ErrUnconsumed = errors.New("stream: stage output goes nowhere")
	// ErrDuplicate is wrapped by the StageError of a stage named like an
	// earlier stage of the pipeline, or whose operator or stream is named
	// like another one of the pipeline.
	ErrDuplicate = errors.New("stream: name used twice")
	// ErrBuilt is wrapped by the StageError of a stage added after Build.
	ErrBuilt = errors.New("stream: pipeline already built")
	// ErrInvalid is wrapped by the StageError of a stage given a bad
	// argument (a bad name, a nil function or codec, an option that does
	// not apply).
	ErrInvalid = errors.New("stream: invalid stage")
	// ErrNoTimerFunc is wrapped by Context.SetTimer and SetEventTimer in
	// a Process stage without the Processor function the timer would
	// call.
	ErrNoTimerFunc = errors.New("stream: no timer function")
)

// StageError reports a stage Build refuses: the pipeline, the stage and
// what is wrong with it.
type StageError struct {
	Pipeline string // the pipeline's name
	Stage    string // the stage's name
	Problem  string // what is wrong and what to do
	Err      error  // a sentinel of this package, or the error found (a *sdk.MetadataError, a *window.ConfigError)
}

// Error returns e.g. `stream: pipeline "wc": stage "split": its output
// goes nowhere: pass it to a later stage, To or Output`.
func (e *StageError) Error() string {
	return fmt.Sprintf("stream: pipeline %q: stage %q: %s", e.Pipeline, e.Stage, e.Problem)
}

// Unwrap returns Err.
func (e *StageError) Unwrap() error { return e.Err }
