package node

import (
	"fmt"
	"os"

	"github.com/sluicehq/sluice/actors/transport"
	"github.com/sluicehq/sluice/control"
	"github.com/sluicehq/sluice/launcher"
)

// ControlSecurity says who may use the control API: TLS, bearer tokens
// with roles, client certificates; see control.Security and
// docs/security.md.
type ControlSecurity = control.Security

// NodeSecurity configures mutual TLS between the nodes of a cluster: the
// cluster CA and this node's certificate, named after its node id; see
// transport.Security and docs/security.md.
//
// Its fields (go doc transport.Security has them in full):
//
//	TLS creds.Config // TLS names the cluster CA bundle (CAFile) and this node's certificate and key …
//	Insecure bool    // Insecure lets a cluster node run its actor port without TLS, open to whoever reaches …
type NodeSecurity = transport.Security

// LaunchPolicy says which executables the local launcher (Config.Launch)
// may start, and which environment variables manifests may give them; see
// launcher.Policy.
type LaunchPolicy = launcher.Policy

// ControlSecurityFromEnv returns the settings that a nil
// Config.ControlSecurity means: those of the SLUICE_CONTROL_* variables
// (see control.SecurityFromEnv). With none set, the control API has no
// authentication.
func ControlSecurityFromEnv() (ControlSecurity, error) { return control.SecurityFromEnv(os.Getenv) }

// NodeSecurityFromEnv returns the settings that a nil Config.NodeSecurity
// means: those of $SLUICE_NODE_CA, $SLUICE_NODE_CERT and $SLUICE_NODE_KEY.
// With none set, traffic between nodes is neither encrypted nor
// authenticated.
func NodeSecurityFromEnv() NodeSecurity { return transport.SecurityFromEnv(os.Getenv) }

// nodeSecurity resolves cfg's node security (nil: from the environment).
func nodeSecurity(cfg Config) NodeSecurity {
	if cfg.NodeSecurity != nil {
		return *cfg.NodeSecurity
	}
	return NodeSecurityFromEnv()
}

// LaunchPolicyFromEnv returns the policy that a nil Config.LaunchPolicy
// means: that of $SLUICE_LAUNCH_ALLOW, $SLUICE_LAUNCH_DIR and
// $SLUICE_LAUNCH_ALLOW_ENV (see launcher.PolicyFromEnv). With none set, no
// executable may be launched.
func LaunchPolicyFromEnv() (LaunchPolicy, error) { return launcher.PolicyFromEnv(os.Getenv) }

// security resolves cfg's control security and launch policy (nil: from
// the environment) and checks that they fit together.
func security(cfg Config) (ControlSecurity, LaunchPolicy, error) {
	var sec ControlSecurity
	if cfg.ControlSecurity != nil {
		sec = *cfg.ControlSecurity
	} else {
		var err error
		if sec, err = ControlSecurityFromEnv(); err != nil {
			return sec, LaunchPolicy{}, fmt.Errorf("node: start: %w", err)
		}
	}
	var pol LaunchPolicy
	if cfg.LaunchPolicy != nil {
		pol = *cfg.LaunchPolicy
	} else {
		var err error
		if pol, err = LaunchPolicyFromEnv(); err != nil {
			return sec, pol, fmt.Errorf("node: start: %w", err)
		}
	}
	if !cfg.Launch || cfg.Consul == "" {
		return sec, pol, nil
	}
	if cfg.HTTP == "" || !sec.Authenticated() {
		return sec, pol, fmt.Errorf("%w: a launcher starts the executables of deployed operators, so the node's control API (HTTP, -http) must "+
			"require tokens (ControlSecurity.TokensFile, -control-tokens-file) or client certificates (ControlSecurity.CertRoles, -control-cert-roles); "+
			"see docs/security.md", ErrLaunchNeedsAuth)
	}
	if err := pol.Validate(); err != nil {
		return sec, pol, fmt.Errorf("node: start: Launch: %w", err)
	}
	return sec, pol, nil
}
