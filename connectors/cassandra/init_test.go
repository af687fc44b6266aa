package cassandra_test

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connectors/cassandra"
	"github.com/sluicehq/sluice/creds"
	"github.com/sluicehq/sluice/internal/cqltest"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/sdktest"
)

// TestInitRefusesWhatTheClusterRefuses: each wrong setting gives an error
// at start naming it.
func TestInitRefusesWhatTheClusterRefuses(t *testing.T) {
	s := start(t, cqltest.Config{Tables: []cqltest.Table{events, {Keyspace: "app", Name: "hits",
		Columns: []cqltest.Column{{Name: "k", Type: "text", Kind: cqltest.PartitionKey}, {Name: "n", Type: "counter"}}}},
		Username: "sluice", Password: "secret"})
	for _, tc := range []struct {
		name, want string
		transient  bool
		edit       func(*cassandra.SinkConfig)
	}{
		{"password", "check Username and Password", false, func(c *cassandra.SinkConfig) { c.Password = "wrong" }},
		{"no credentials", "check Username and Password", false, func(c *cassandra.SinkConfig) { c.Username, c.Password = "", "" }},
		{"keyspace", "check Keyspace", false, func(c *cassandra.SinkConfig) { c.Keyspace = "nosuch" }},
		{"table", "check Table", false, func(c *cassandra.SinkConfig) { c.Table = "nosuch" }},
		{"column", "check Columns[2]", false, func(c *cassandra.SinkConfig) { c.Columns = []string{"k", "i", "nosuch"} }},
		{"primary key", `primary key column "i" of app.events is not in Columns`, false, func(c *cassandra.SinkConfig) {
			c.Columns = []string{"k", "n"}
		}},
		{"unreachable", "cluster unavailable", true, func(c *cassandra.SinkConfig) {
			c.Hosts = []string{fmt.Sprintf("127.0.0.1:%d", sluicetest.FreePort(t))}
		}},
		{"tls to a plain server", "check TLS", false, func(c *cassandra.SinkConfig) {
			c.TLS = &cassandra.TLSConfig{InsecureSkipVerify: true}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := baseConfig(s)
			c.Username, c.Password = "sluice", "secret"
			tc.edit(&c)
			_, err := sdktest.New(mustSink(t, c))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error saying %q", err, tc.want)
			}
			if got := errors.Is(err, sdk.ErrTransient); got != tc.transient {
				t.Fatalf("transient %v, want %v: %v", got, tc.transient, err)
			}
			if !tc.transient && !errors.Is(err, cassandra.ErrRefused) {
				t.Fatalf("%v does not wrap ErrRefused", err)
			}
			if tc.transient && !errors.Is(err, cassandra.ErrUnavailable) {
				t.Fatalf("%v does not wrap ErrUnavailable", err)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Fatalf("error shows the password: %v", err)
			}
		})
	}
}

// TestTLS: the sink writes over TLS with the server's CA, and refuses a
// server whose certificate another CA signed.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	ca, err := creds.NewCA("cqltest-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.Issue(creds.Request{Name: "cqltest", IPs: []net.IP{net.ParseIP("127.0.0.1")}, Valid: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "ca.pem")
	other, err := creds.NewCA("other-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	otherFile := filepath.Join(dir, "other.pem")
	for f, b := range map[string][]byte{caFile: ca.CertPEM, otherFile: other.CertPEM} {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s := start(t, cqltest.Config{TLS: &tls.Config{Certificates: []tls.Certificate{cert}}})

	c := baseConfig(s)
	c.TLS = &cassandra.TLSConfig{CAFile: otherFile}
	if _, err := sdktest.New(mustSink(t, c)); err == nil || !errors.Is(err, cassandra.ErrRefused) || !strings.Contains(err.Error(), "check TLS") {
		t.Fatalf("a certificate of another CA: got %v, want a refusal naming TLS", err)
	}
	c.TLS = &cassandra.TLSConfig{CAFile: caFile}
	h, err := sdktest.New(mustSink(t, c))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Send("in", sdk.Record{Value: []byte(`{"k": "a", "i": 1, "n": 7}`)}); err != nil {
		t.Fatal(err)
	}
	if err := h.Checkpoint(1); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if n := s.Count("app", "events"); n != 1 {
		t.Fatalf("%d rows over TLS, want 1", n)
	}
}
