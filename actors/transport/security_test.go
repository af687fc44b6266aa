package transport_test

import (
	"flag"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/actors/transport"
)

// TestSecurityFlagsAndEnvironment: flags override the SLUICE_NODE_*
// variables, Environ writes what SecurityFromEnv
// reads, and Validate names what is missing.
func TestSecurityFlagsAndEnvironment(t *testing.T) {
	env := map[string]string{"SLUICE_NODE_CA": "/env/ca.pem", "SLUICE_NODE_CERT": "/env/n1.pem", "SLUICE_NODE_KEY": "/env/n1-key.pem"}
	var s transport.Security
	fs := flag.NewFlagSet("node", flag.ContinueOnError)
	s.RegisterFlags(fs, func(k string) string { return env[k] })
	if err := fs.Parse([]string{"-node-cert", "/flag/n1.pem"}); err != nil {
		t.Fatal(err)
	}
	if s.TLS.CAFile != "/env/ca.pem" || s.TLS.CertFile != "/flag/n1.pem" || s.TLS.KeyFile != "/env/n1-key.pem" {
		t.Fatalf("got %+v, want the CA and key from the environment, the certificate from the flag", s.TLS)
	}
	got := s.Environ()
	want := []string{"SLUICE_NODE_CA=/env/ca.pem", "SLUICE_NODE_CERT=/flag/n1.pem", "SLUICE_NODE_KEY=/env/n1-key.pem"}
	if !slices.Equal(got, want) {
		t.Fatalf("Environ: got %v, want %v", got, want)
	}
	back := transport.SecurityFromEnv(func(k string) string {
		for _, kv := range got {
			if name, v, _ := strings.Cut(kv, "="); name == k {
				return v
			}
		}
		return ""
	})
	if back != s {
		t.Fatalf("round trip: got %+v, want %+v", back, s)
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := (transport.Security{}).Validate(); err != nil {
		t.Fatalf("disabled: %v", err)
	}
	for name, c := range map[string]struct {
		s    transport.Security
		want string
	}{
		"no CA":  {transport.SecurityFromEnv(func(k string) string { return map[string]string{"SLUICE_NODE_CERT": "c", "SLUICE_NODE_KEY": "k"}[k] }), "-node-ca"},
		"no key": {transport.SecurityFromEnv(func(k string) string { return map[string]string{"SLUICE_NODE_CA": "a", "SLUICE_NODE_CERT": "c"}[k] }), "-node-key"},
	} {
		if err := c.s.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error naming %s", name, err, c.want)
		}
	}
}
