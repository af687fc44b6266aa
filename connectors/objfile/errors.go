package objfile

import "errors"

// Errors returned (wrapped) by the package.
var (
	// ErrConfig: a SinkConfig that cannot work; the message names the
	// field and the fix.
	ErrConfig = errors.New("objfile: bad configuration")
)
