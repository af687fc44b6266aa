package launcher

import "errors"

// Errors of package launcher; the status of a refused process says why.
var (
	// ErrNotAllowed: the policy does not allow the executable.
	ErrNotAllowed = errors.New("launcher: executable not allowed")
	// ErrDigestMismatch: the executable's contents differ from its pinned
	// SHA-256 digest.
	ErrDigestMismatch = errors.New("launcher: executable digest mismatch")
	// ErrEnvDenied: the manifest sets an environment variable the policy
	// refuses.
	ErrEnvDenied = errors.New("launcher: environment variable refused")
	// ErrUnsafeName: an operator name is not safe as a directory name.
	ErrUnsafeName = errors.New("launcher: operator name not safe as a path")
)
