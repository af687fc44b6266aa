package kafka_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/sluicehq/sluice/connectors/kafka"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/sdktest"
)

// startCluster starts a kfake cluster with opts on run-time ports and
// closes it when the test ends.
func startCluster(t *testing.T, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// produceWith writes values 0..n-1 to topic with a client made of opts.
func produceWith(t *testing.T, addrs []string, topic string, n int, opts ...kgo.Opt) {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addrs...), kgo.DefaultProduceTopic(topic)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatalf("produce with the test's own client: %v", err)
		}
	}
}

// pollForError polls src until Poll fails for another reason than a
// transient outage, or an outage lasts, and returns the error.
func pollForError(t *testing.T, h *sdktest.Harness) error {
	t.Helper()
	var err error
	sluicetest.WaitEvery(t, 20*time.Second, 20*time.Millisecond, "Poll to fail", func() bool {
		err = h.Poll()
		if len(h.Output("s")) > 0 {
			t.Fatalf("produced %d records with bad credentials", len(h.Output("s")))
		}
		return err != nil && !errors.Is(err, sdk.ErrTransient)
	})
	return err
}

// mustRefuse fails unless err is a refusal (ErrAuthentication, not
// transient) whose message names every one of hints.
func mustRefuse(t *testing.T, err error, hints ...string) {
	t.Helper()
	if !errors.Is(err, kafka.ErrAuthentication) || errors.Is(err, sdk.ErrTransient) {
		t.Fatalf("got %v, want a non-transient error wrapping ErrAuthentication", err)
	}
	for _, h := range hints {
		if !strings.Contains(err.Error(), h) {
			t.Fatalf("error %q does not mention %q", err, h)
		}
	}
	t.Logf("refused clearly: %v", err)
}

func TestSASLRefusesAWrongPasswordClearlyAndAcceptsTheRightOne(t *testing.T) {
	mechs := map[string]func(user, pass string) kgo.Opt{
		kafka.SASLPlain:       func(u, p string) kgo.Opt { return kgo.SASL(plain.Auth{User: u, Pass: p}.AsMechanism()) },
		kafka.SASLScramSHA256: func(u, p string) kgo.Opt { return kgo.SASL(scram.Auth{User: u, Pass: p}.AsSha256Mechanism()) },
		kafka.SASLScramSHA512: func(u, p string) kgo.Opt { return kgo.SASL(scram.Auth{User: u, Pass: p}.AsSha512Mechanism()) },
	}
	opts := []kfake.Opt{kfake.EnableSASL(), kfake.SeedTopics(1, "t", "out")}
	for m := range mechs {
		opts = append(opts, kfake.Superuser(m, "alice", "right-"+m))
	}
	c := startCluster(t, opts...)
	addrs := c.ListenAddrs()
	produceWith(t, addrs, "t", 10, mechs[kafka.SASLScramSHA256]("alice", "right-"+kafka.SASLScramSHA256))

	for m, own := range mechs {
		t.Run(m, func(t *testing.T) {
			sec := func(pass string) kafka.Security {
				return kafka.Security{SASL: &kafka.SASL{Mechanism: strings.ToLower(m), User: "alice", Password: pass}}
			}
			src := func(pass string) sdk.Factory {
				f, err := kafka.NewSource(kafka.SourceConfig{Name: "src", Brokers: addrs, Topics: []string{"t"}, Stream: "s", Security: sec(pass)})
				if err != nil {
					t.Fatal(err)
				}
				return f
			}
			mustRefuse(t, pollForError(t, start(t, src("wrong"))), "Security.SASL", "alice", m)

			pollUntil(t, start(t, src("right-"+m)), "s", 10)

			sink := func(pass string) sdk.Factory {
				f, err := kafka.NewSink(kafka.SinkConfig{Name: "sink", Brokers: addrs, Topic: "out", Inputs: []sdk.Input{{Stream: "s"}},
					FlushTimeout: 200 * time.Millisecond, CloseTimeout: 200 * time.Millisecond, Security: sec(pass)})
				if err != nil {
					t.Fatal(err)
				}
				return f
			}
			bs := start(t, sink("wrong"))
			if err := bs.Send("s", sdk.Record{Value: []byte("x")}); err != nil {
				t.Fatal(err)
			}
			var ferr error
			sluicetest.WaitEvery(t, 20*time.Second, 20*time.Millisecond, "Flush to report the refusal", func() bool {
				ferr = bs.Flush()
				if ferr == nil {
					t.Fatal("Flush succeeded with a wrong password")
				}
				return errors.Is(ferr, kafka.ErrAuthentication)
			})
			mustRefuse(t, ferr, "Security.SASL")

			gs := start(t, sink("right-"+m))
			if err := gs.Send("s", sdk.Record{Value: []byte(m)}); err != nil {
				t.Fatal(err)
			}
			// The runtime retries a transient Flush; so does the test (on a
			// busy machine the SCRAM exchange alone can take longer than
			// FlushTimeout).
			sluicetest.WaitEvery(t, 20*time.Second, 20*time.Millisecond, "Flush with the right password", func() bool {
				err := gs.Flush()
				if err != nil && !errors.Is(err, sdk.ErrTransient) {
					t.Fatalf("Flush with the right password: %v", err)
				}
				return err == nil
			})
			got := readAll(t, addrs, "out", kgo.ReadUncommitted(), own("alice", "right-"+m))
			found := false
			for _, v := range got {
				found = found || v == m
			}
			if !found {
				t.Fatalf("record %q not in the topic: %v", m, got)
			}
		})
	}
}

func TestTLSVerifiesTheBrokersAndPresentsTheClientCertificate(t *testing.T) {
	dir := t.TempDir()
	ca := newCA(t, "sluice test CA")
	other := newCA(t, "another CA")
	serverCert := ca.issue(t, "broker", false)
	ca.write(t, dir, "ca")
	other.write(t, dir, "other")
	ca.issue(t, "client", true).write(t, dir, "client")
	other.issue(t, "client", true).write(t, dir, "stranger")

	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	c := startCluster(t, kfake.SeedTopics(1, "t"), kfake.EnableSASL(), kfake.Superuser(kafka.SASLScramSHA512, "svc", "pw"),
		kfake.TLS(&tls.Config{Certificates: []tls.Certificate{serverCert.tls}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool, MinVersion: tls.VersionTLS12}))
	addrs := c.ListenAddrs()
	clientTLS, err := (&kafka.TLS{CAFile: filepath.Join(dir, "ca.pem"), CertFile: filepath.Join(dir, "client.pem"), KeyFile: filepath.Join(dir, "client-key.pem")}).Config()
	if err != nil {
		t.Fatal(err)
	}
	produceWith(t, addrs, "t", 5, kgo.DialTLSConfig(clientTLS), kgo.SASL(scram.Auth{User: "svc", Pass: "pw"}.AsSha512Mechanism()))

	src := func(tlsCfg *kafka.TLS) *sdktest.Harness {
		f, err := kafka.NewSource(kafka.SourceConfig{Name: "src", Brokers: addrs, Topics: []string{"t"}, Stream: "s",
			Security: kafka.Security{TLS: tlsCfg, SASL: &kafka.SASL{Mechanism: kafka.SASLScramSHA512, User: "svc", Password: "pw"}}})
		if err != nil {
			t.Fatal(err)
		}
		return start(t, f)
	}
	p := func(name string) string { return filepath.Join(dir, name) }

	pollUntil(t, src(&kafka.TLS{CAFile: p("ca.pem"), CertFile: p("client.pem"), KeyFile: p("client-key.pem")}), "s", 5)

	wrongCA := src(&kafka.TLS{CAFile: p("other.pem"), CertFile: p("client.pem"), KeyFile: p("client-key.pem")})
	mustRefuse(t, pollForError(t, wrongCA), "Security.TLS.CAFile")

	noCert := src(&kafka.TLS{CAFile: p("ca.pem")})
	mustRefuse(t, pollForError(t, noCert), "Security.TLS.CertFile")

	stranger := src(&kafka.TLS{CAFile: p("ca.pem"), CertFile: p("stranger.pem"), KeyFile: p("stranger-key.pem")})
	mustRefuse(t, pollForError(t, stranger), "Security.TLS")

}

func TestSecurityConfigErrorsNameTheField(t *testing.T) {
	dir := t.TempDir()
	ca := newCA(t, "ca")
	ca.write(t, dir, "ca")
	ca.issue(t, "client", true).write(t, dir, "client")
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := func(name string) string { return filepath.Join(dir, name) }
	for _, tc := range []struct {
		name  string
		sec   kafka.Security
		field string
	}{
		{"plaintext", kafka.Security{}, ""},
		{"scram", kafka.Security{SASL: &kafka.SASL{Mechanism: "scram-sha-256", User: "u", Password: "p"}}, ""},
		{"tls", kafka.Security{TLS: &kafka.TLS{CAFile: p("ca.pem"), CertFile: p("client.pem"), KeyFile: p("client-key.pem")}}, ""},
		{"unknown mechanism", kafka.Security{SASL: &kafka.SASL{Mechanism: "GSSAPI", User: "u", Password: "p"}}, "Security.SASL.Mechanism"},
		{"no user", kafka.Security{SASL: &kafka.SASL{Mechanism: "PLAIN", Password: "p"}}, "Security.SASL.User"},
		{"no password", kafka.Security{SASL: &kafka.SASL{Mechanism: "PLAIN", User: "u"}}, "Security.SASL.Password"},
		{"missing CA", kafka.Security{TLS: &kafka.TLS{CAFile: p("nope.pem")}}, "Security.TLS.CAFile"},
		{"CA not PEM", kafka.Security{TLS: &kafka.TLS{CAFile: garbage}}, "Security.TLS.CAFile"},
		{"cert without key", kafka.Security{TLS: &kafka.TLS{CertFile: p("client.pem")}}, "Security.TLS.KeyFile"},
		{"key without cert", kafka.Security{TLS: &kafka.TLS{KeyFile: p("client-key.pem")}}, "Security.TLS.CertFile"},
		{"key of another cert", kafka.Security{TLS: &kafka.TLS{CertFile: p("client.pem"), KeyFile: p("ca-key.pem")}}, "Security.TLS.CertFile"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check := func(err error) {
				t.Helper()
				var ce *kafka.ConfigError
				switch {
				case tc.field == "" && err != nil:
					t.Fatalf("got %v, want no error", err)
				case tc.field != "" && (!errors.As(err, &ce) || ce.Field != tc.field):
					t.Fatalf("got %v, want an error on field %s", err, tc.field)
				}
			}
			check(kafka.SourceConfig{Name: "src", Brokers: []string{"127.0.0.1:9092"}, Topics: []string{"t"}, Stream: "s", Security: tc.sec}.Validate())
			check(kafka.SinkConfig{Name: "out", Brokers: []string{"127.0.0.1:9092"}, Topic: "t", Inputs: []sdk.Input{{Stream: "s"}}, Security: tc.sec}.Validate())
			var ce *kafka.ConfigError
			err := kafka.StateLogConfig{Brokers: []string{"127.0.0.1:9092"}, Security: tc.sec}.Validate()
			if (tc.field == "") != (err == nil) || err != nil && (!errors.As(err, &ce) || ce.Field != tc.field) {
				t.Fatalf("state log: got %v, want field %q", err, tc.field)
			}
		})
	}
}

// testCA is a certificate authority for tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	tls  tls.Certificate
	pem  []byte
	kpem []byte
}

func newCA(t *testing.T, name string) *testCA {
	t.Helper()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	return makeCert(t, tmpl, nil)
}

// issue returns a certificate for 127.0.0.1 signed by ca, for a client
// or a server.
func (ca *testCA) issue(t *testing.T, name string, client bool) *testCA {
	t.Helper()
	usage := x509.ExtKeyUsageServerAuth
	if client {
		usage = x509.ExtKeyUsageClientAuth
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"}}
	return makeCert(t, tmpl, ca)
}

func makeCert(t *testing.T, tmpl *x509.Certificate, parent *testCA) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, signerCert := key, tmpl
	if parent != nil {
		signer, signerCert = parent.key, parent.cert
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signerCert, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	c := &testCA{cert: cert, key: key,
		pem:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		kpem: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})}
	if c.tls, err = tls.X509KeyPair(c.pem, c.kpem); err != nil {
		t.Fatal(err)
	}
	return c
}

// write writes <name>.pem and <name>-key.pem to dir.
func (ca *testCA) write(t *testing.T, dir, name string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name+".pem"), ca.pem, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+"-key.pem"), ca.kpem, 0o600); err != nil {
		t.Fatal(err)
	}
}
