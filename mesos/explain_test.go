package mesos

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mesos/mesos-go/api/v1/lib/httpcli/apierrors"
)

// TestExplainUnauthorized: a 401 becomes ErrUnauthenticated with what to
// fix for each configuration, never with the secret; other errors pass.
func TestExplainUnauthorized(t *testing.T) {
	err401 := fmt.Errorf("subscription terminated: %w", apierrors.CodeNotAuthenticated.Error(""))
	for _, tc := range []struct {
		principal, secret string
		want              string
	}{
		{"", "", "no principal is configured: set --principal and --secret-file"},
		{"fw", "", `principal "fw" has no secret: set --secret-file`},
		{"fw", "hunter2", `refused the credentials of principal "fw" (401: call not authenticated; WWW-Authenticate: Basic realm="r"): check the secret in --secret-file`},
	} {
		cfg := &Config{Principal: tc.principal, Secret: tc.secret}
		err := explainUnauthorized(cfg, "http://m:5050/api/v1/scheduler", `Basic realm="r"`, err401)
		if !errors.Is(err, ErrUnauthenticated) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "http://m:5050") {
			t.Errorf("%q/%q: %v, want ErrUnauthenticated containing %q", tc.principal, tc.secret, err, tc.want)
		}
		if tc.secret != "" && strings.Contains(err.Error(), tc.secret) {
			t.Errorf("error %q contains the secret", err)
		}
	}
	other := apierrors.CodeUnsubscribed.Error("Framework is not subscribed")
	if err := explainUnauthorized(&Config{}, "e", "", other); err != other {
		t.Errorf("403 became %v", err)
	}
}
