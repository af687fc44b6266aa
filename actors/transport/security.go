package transport

import (
	"errors"
	"flag"
	"strings"

	"github.com/sluicehq/sluice/creds"
)

// Security configures mutual TLS on the node-to-node transport
// (protoactor remote over gRPC), see docs/security.md. Every node of a
// cluster should use the same CA bundle.
//
// When it is enabled, a node accepts connections only from clients whose
// node certificate (client and server usage) is signed by TLS.CAFile,
// connects only to servers whose certificate is (and names the member at
// the address dialled), presents TLS.CertFile both ways, and drops any
// message whose claimed sender node (the node field of Leaving,
// HandoffRequest, HandoffReply, CheckpointPart, RollbackDone; the node a
// HandoffChunk was asked of) is not the identity of the certificate it
// arrived over, or an operator process that node's launcher started. A
// certificate's identity is creds.Identity: its subject common name (else
// its first DNS name); it must be the node's id ("sluice certs node ID"
// makes such certificates). The files are reread when they change: new
// connections use the new certificate and CA bundle without a restart.
type Security struct {
	// TLS names the cluster CA bundle (CAFile) and this node's certificate
	// and key (CertFile, KeyFile). All three, or none (no TLS: anyone who
	// reaches the node's address can send it messages).
	TLS creds.Config
	// Insecure lets a cluster node run its actor port without TLS, open
	// to whoever reaches its address (records, state handoff, membership
	// messages), on a network only the cluster reaches: node.Start refuses
	// to join a cluster without TLS otherwise. It changes nothing when TLS
	// is configured.
	Insecure bool
}

// Enabled reports whether s configures any file.
func (s Security) Enabled() bool { return s.TLS.Enabled() }

// Validate checks s without reading its files: every problem names the
// field and the fix. A disabled Security is valid.
func (s Security) Validate() error {
	if !s.Enabled() {
		return nil
	}
	var errs []error
	if s.TLS.CAFile == "" {
		errs = append(errs, errors.New("transport: Security.TLS needs CAFile, the cluster CA that signs every node's certificate (-node-ca, $"+EnvNodeCA+")"))
	}
	if s.TLS.CertFile == "" || s.TLS.KeyFile == "" {
		errs = append(errs, errors.New("transport: Security.TLS needs CertFile and KeyFile, this node's certificate and key (-node-cert, -node-key, $"+
			EnvNodeCert+", $"+EnvNodeKey+")"))
	}
	if err := s.TLS.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Environment variables read by SecurityFromEnv and written by
// Environ.
const (
	EnvNodeCA   = "SLUICE_NODE_CA"
	EnvNodeCert = "SLUICE_NODE_CERT"
	EnvNodeKey  = "SLUICE_NODE_KEY"
	// EnvNodeInsecure is Security.Insecure: any value but "", 0
	// or false.
	EnvNodeInsecure = "SLUICE_NODE_INSECURE"
)

// SecurityFromEnv reads the settings from $SLUICE_NODE_CA,
// $SLUICE_NODE_CERT and $SLUICE_NODE_KEY (getenv nil means none is set).
func SecurityFromEnv(getenv func(string) string) Security {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	v := strings.ToLower(strings.TrimSpace(getenv(EnvNodeInsecure)))
	return Security{TLS: creds.Config{CAFile: getenv(EnvNodeCA), CertFile: getenv(EnvNodeCert), KeyFile: getenv(EnvNodeKey)},
		Insecure: v != "" && v != "0" && v != "false" && v != "no"}
}

// Environ returns the SLUICE_NODE_* variables that make another process
// (a slug a launcher starts) use the same CA bundle and certificate, as
// SecurityFromEnv reads them.
func (s Security) Environ() []string {
	var env []string
	for _, kv := range [][2]string{{EnvNodeCA, s.TLS.CAFile}, {EnvNodeCert, s.TLS.CertFile}, {EnvNodeKey, s.TLS.KeyFile}} {
		if kv[1] != "" {
			env = append(env, kv[0]+"="+kv[1])
		}
	}
	if s.Insecure {
		env = append(env, EnvNodeInsecure+"=1")
	}
	return env
}

// RegisterFlags defines -node-ca, -node-cert and -node-key on fs, setting
// s, with the SLUICE_NODE_* variables (getenv nil means none) as defaults.
func (s *Security) RegisterFlags(fs *flag.FlagSet, getenv func(string) string) {
	*s = SecurityFromEnv(getenv)
	fs.StringVar(&s.TLS.CAFile, "node-ca", s.TLS.CAFile, "cluster CA bundle (PEM) that signs every node's certificate: mutual TLS between nodes ($"+EnvNodeCA+")")
	fs.StringVar(&s.TLS.CertFile, "node-cert", s.TLS.CertFile, "this node's certificate (PEM), named after the node id, for node-to-node traffic ($"+EnvNodeCert+")")
	fs.StringVar(&s.TLS.KeyFile, "node-key", s.TLS.KeyFile, "the private key of -node-cert ($"+EnvNodeKey+")")
	fs.BoolVar(&s.Insecure, "node-insecure", s.Insecure, "join a cluster without -node-* certificates: the actor port then takes records and membership messages from whoever reaches it; only on a network the cluster alone reaches ($"+EnvNodeInsecure+")")
}
