package control

import "errors"

// Errors of package control.
var (
	// ErrNoAuth: the control API would serve without authentication on an
	// address other hosts reach.
	ErrNoAuth = errors.New("control: no authentication configured")
)
