package connect

import "errors"

// Errors of the kit.
var (
	// ErrCorrupt is a state entry of the kit that does not decode.
	ErrCorrupt = errors.New("connect: corrupt state entry")
	// ErrConfig is a source or sink configuration that cannot work; the
	// error wrapping it names the field.
	ErrConfig = errors.New("connect: bad configuration")
)
