package consul

import (
	"errors"
	"fmt"
	"net/http"
)

// ErrPermissionDenied is returned (wrapped) when Consul refuses a request
// with 403 "Permission denied": the ACL token lacks a permission. The
// error names the permission the request needs.
var ErrPermissionDenied = errors.New("consul: permission denied by Consul ACLs")

// denied wraps a 403 from Consul with ErrPermissionDenied and the
// permission (e.g. "service:write") that the request needs on the
// cluster's service. Consul 1.14's own message names the token's
// AccessorID and the missing permission ("Permission denied: token with
// AccessorID '...' lacks permission 'service:write' on \"sluice\""); it
// stays in the chain. Other errors are returned unchanged.
func (d *Discovery) denied(err error, permission string) error {
	if !isStatus(err, http.StatusForbidden) {
		return err
	}
	return fmt.Errorf("%w: the ACL token (Config.Token, else CONSUL_HTTP_TOKEN, else the agent's default token) needs %s on service %q: %w",
		ErrPermissionDenied, permission, d.cfg.Service, err)
}
