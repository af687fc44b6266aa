package mesos

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/mesos/mesos-go/api/v1/lib/httpcli/apierrors"
)

// ErrUnauthenticated is returned (wrapped) when a master refused the
// framework's credentials, or asked for credentials the framework does not
// have: 401 Unauthorized, which a Mesos master started with
// --authenticate_http_frameworks answers to every call without valid HTTP
// Basic credentials.
var ErrUnauthenticated = errors.New("mesos: not authenticated by the master")

// explainUnauthorized turns a 401 answer of the master at endpoint into
// an error that says what to fix: the principal's secret, or setting
// --principal and --secret-file. challenge is the answer's
// WWW-Authenticate header. Other errors are returned unchanged. The
// secret never appears in the message.
func explainUnauthorized(cfg *Config, endpoint, challenge string, err error) error {
	var apiErr *apierrors.Error
	if !errors.As(err, &apiErr) || !apierrors.CodeNotAuthenticated.Matches(apiErr) {
		return err
	}
	// apiErr says "call not authenticated", plus the body if any (Mesos
	// sends none).
	what := fmt.Sprintf("%d: %v", http.StatusUnauthorized, apiErr)
	if challenge != "" {
		what += "; WWW-Authenticate: " + challenge
	}
	switch {
	case cfg.Principal == "":
		return fmt.Errorf("%w: master %s requires framework authentication (%s) and no principal is configured: set --principal and --secret-file (SLUICE_MESOS_PRINCIPAL, SLUICE_MESOS_SECRET_FILE) to credentials the master's --credentials lists",
			ErrUnauthenticated, endpoint, what)
	case cfg.Secret == "":
		return fmt.Errorf("%w: master %s requires framework authentication (%s) and principal %q has no secret: set --secret-file to a file holding its secret",
			ErrUnauthenticated, endpoint, what, cfg.Principal)
	default:
		return fmt.Errorf("%w: master %s refused the credentials of principal %q (%s): check the secret in --secret-file, and that the master's --credentials lists this principal",
			ErrUnauthenticated, endpoint, cfg.Principal, what)
	}
}
