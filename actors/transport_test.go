package actors_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/proto"

	"github.com/sluicehq/sluice/actors"
	"github.com/sluicehq/sluice/actors/transport"
	"github.com/sluicehq/sluice/actors/wire"
	"github.com/sluicehq/sluice/cluster/memdisc"
	"github.com/sluicehq/sluice/creds"
	"github.com/sluicehq/sluice/creds/credstest"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/internal/sluicetest"
	tpebble "github.com/sluicehq/sluice/topology/pebble"
)

// logRecorder is a slog handler that keeps every record (with its
// attributes as "key=value" text) and passes it on.
type logRecorder struct {
	next  slog.Handler
	attrs string
	mu    *sync.Mutex
	lines *[]string
}

func newLogRecorder(t *testing.T) (*slog.Logger, *logRecorder) {
	r := &logRecorder{next: sluicetest.Logger(t).Handler(), mu: &sync.Mutex{}, lines: new([]string)}
	return slog.New(r), r
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (r *logRecorder) Handle(ctx context.Context, rec slog.Record) error {
	var b strings.Builder
	b.WriteString(rec.Message + r.attrs)
	rec.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	r.mu.Lock()
	*r.lines = append(*r.lines, b.String())
	r.mu.Unlock()
	if r.next.Enabled(ctx, rec.Level) {
		return r.next.Handle(ctx, rec)
	}
	return nil
}

func (r *logRecorder) WithAttrs(as []slog.Attr) slog.Handler {
	c := *r
	c.next = r.next.WithAttrs(as)
	for _, a := range as {
		c.attrs += fmt.Sprintf(" %s=%v", a.Key, a.Value)
	}
	return &c
}

func (r *logRecorder) WithGroup(name string) slog.Handler {
	c := *r
	c.next = r.next.WithGroup(name)
	return &c
}

// has reports whether a logged line contains every one of parts.
func (r *logRecorder) has(parts ...string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range *r.lines {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(l, p)
		}
		if all {
			return true
		}
	}
	return false
}

// startTLSNode starts a one-node cluster named id whose transport uses the
// files f.
func startTLSNode(t *testing.T, id string, f credstest.Files, logger *slog.Logger, ops ...core.Factory) *actors.Node {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := actors.Start(ctx, actors.Config{
		LocalStore: tpebble.Local,
		NodeID:     id, DataDir: t.TempDir(), NoSync: true, Logger: logger,
		Cluster: &actors.ClusterConfig{Discovery: memdisc.New(memdisc.NewRegistry()), Security: transport.Security{TLS: f.Config()}},
	}, ops...)
	if err != nil {
		t.Fatalf("start %s: %v", id, err)
	}
	t.Cleanup(func() { _ = n.Stop(context.Background()) })
	return n
}

// rawPeer is a gRPC client of a node's protoactor Remoting service that
// speaks the protocol by hand, as a stranger (or a compromised node) would.
type rawPeer struct {
	conn   *grpc.ClientConn
	stream remote.Remoting_ReceiveClient
}

// dialRaw connects to addr with cfg and runs protoactor's connect exchange.
func dialRaw(t *testing.T, addr string, cfg *tls.Config) (*rawPeer, error) {
	t.Helper()
	return dialRawWith(t, addr, credentials.NewTLS(cfg))
}

// dialRawWith is dialRaw with any transport credentials (insecure ones
// for a node without certificates).
func dialRawWith(t *testing.T, addr string, tc credentials.TransportCredentials) (*rawPeer, error) {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(tc))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	p, err := connect(ctx, conn)
	if err != nil {
		_ = conn.Close() // or it keeps reconnecting
	}
	return p, err
}

// connect runs protoactor's connect exchange on conn.
func connect(ctx context.Context, conn *grpc.ClientConn) (*rawPeer, error) {
	stream, err := remote.NewRemotingClient(conn).Receive(ctx)
	if err != nil {
		return nil, err
	}
	err = stream.Send(&remote.RemoteMessage{MessageType: &remote.RemoteMessage_ConnectRequest{ConnectRequest: &remote.ConnectRequest{
		ConnectionType: &remote.ConnectRequest_ServerConnection{ServerConnection: &remote.ServerConnection{SystemId: "raw", Address: "127.0.0.1:1"}}}}})
	if err != nil {
		return nil, err
	}
	resp, err := stream.Recv()
	if err != nil {
		return nil, err
	}
	if resp.GetConnectResponse() == nil {
		return nil, fmt.Errorf("got %v, want a ConnectResponse", resp)
	}
	return &rawPeer{conn: conn, stream: stream}, nil
}

// send sends msg to the actor id of the node at addr, with a forged peer
// header claiming it comes from forged.
func (p *rawPeer) send(t *testing.T, addr, id string, msg proto.Message, forged string) {
	t.Helper()
	data, typeName, err := remote.Serialize(msg, 0)
	if err != nil {
		t.Fatal(err)
	}
	batch := &remote.MessageBatch{
		TypeNames: []string{typeName},
		Targets:   []*actor.PID{actor.NewPID(addr, id)},
		Envelopes: []*remote.MessageEnvelope{{TypeId: 0, MessageData: data, Target: 0,
			MessageHeader: &remote.MessageHeader{HeaderData: map[string]string{"sluice-peer": forged}}}},
	}
	if err := p.stream.Send(&remote.RemoteMessage{MessageType: &remote.RemoteMessage_MessageBatch{MessageBatch: batch}}); err != nil {
		t.Fatal(err)
	}
}

// clientTLS returns a TLS configuration presenting f's certificate (when
// it has one) and verifying the server against f's CA.
func clientTLS(t *testing.T, f credstest.Files) *tls.Config {
	t.Helper()
	src, err := creds.Load(f.Config())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := src.ClusterTLS()
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// refused dials addr with cfg until the node logs a refusal containing
// want (refusals are logged at most once a second); every dial must fail.
func refused(t *testing.T, logs *logRecorder, addr string, cfg *tls.Config, what, want string) {
	t.Helper()
	sluicetest.WaitEvery(t, 10*time.Second, 100*time.Millisecond, "the refusal of "+what+" logged", func() bool {
		if _, err := dialRaw(t, addr, cfg); err == nil {
			t.Fatalf("%s connected", what)
		}
		return logs.has("node transport: refused a connection", want)
	})
}

// TestNodeTransportRefusesStrangers: only a client with a certificate of
// the cluster CA, still valid, gets to talk to a node's actors.
func TestNodeTransportRefusesStrangers(t *testing.T) {
	ca := credstest.NewCA(t, "cluster CA")
	logger, logs := newLogRecorder(t)
	n := startTLSNode(t, "a", ca.Node(t, "a"), logger)

	if _, err := dialRaw(t, n.Address(), clientTLS(t, ca.Node(t, "n1"))); err != nil {
		t.Fatalf("a node of the cluster CA: %v", err)
	}

	refused(t, logs, n.Address(), clientTLS(t, credstest.Files{CA: ca.CertFile}), "a client without a certificate", "didn't provide a certificate")

	if _, err := dialRaw(t, n.Address(), clientTLS(t, ca.Client(t, "alice"))); err == nil {
		t.Fatal("a client-only certificate of the cluster CA (an operator's) talked to the node")
	}
	sluicetest.WaitFor(t, 10*time.Second, "the refusal of a client-only certificate logged", func() bool {
		return logs.has("node transport: refused a stream", `"alice" is not a node's certificate`)
	})

	other := credstest.NewCA(t, "other CA")
	strangerCfg := clientTLS(t, other.Node(t, "n1"))
	strangerCfg.InsecureSkipVerify, strangerCfg.VerifyConnection = true, nil // it would refuse our node, too
	refused(t, logs, n.Address(), strangerCfg, "a certificate of another CA", "not signed by a CA in "+ca.CertFile)

	expired := ca.Issue(t, creds.Request{Name: "n9", Usage: creds.NodeUsage, NotBefore: time.Now().Add(-2 * time.Hour), Valid: time.Hour})
	expiredCfg := clientTLS(t, credstest.Files{CA: ca.CertFile}) // creds.Load refuses an expired certificate
	pair, err := tls.LoadX509KeyPair(expired.Cert, expired.Key)
	if err != nil {
		t.Fatal(err)
	}
	expiredCfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &pair, nil }
	refused(t, logs, n.Address(), expiredCfg, "an expired certificate", `certificate "n9" has expired`)
}

// TestNodeTransportDropsSpoofedSenders: a node of the cluster may speak
// for itself only.
func TestNodeTransportDropsSpoofedSenders(t *testing.T) {
	ca := credstest.NewCA(t, "cluster CA")
	logger, logs := newLogRecorder(t)
	n := startTLSNode(t, "a", ca.Node(t, "a"), logger)
	p, err := dialRaw(t, n.Address(), clientTLS(t, ca.Node(t, "n1")))
	if err != nil {
		t.Fatal(err)
	}
	// n1 claims to be n2 leaving, with a forged peer header: dropped.
	p.send(t, n.Address(), "sluice-coordinator", &wire.Leaving{Node: "n2"}, "n2")
	sluicetest.WaitFor(t, 10*time.Second, "the spoofed Leaving dropped", func() bool {
		return logs.has("dropped a message claiming to come from another node", "message=Leaving", "claims=n2", "certificate=n1")
	})
	// n1 leaving for itself is taken.
	p.send(t, n.Address(), "sluice-coordinator", &wire.Leaving{Node: "n1"}, "n2")
	sluicetest.WaitFor(t, 10*time.Second, "n1's own Leaving taken", func() bool {
		return logs.has("node is leaving", "leaving=n1")
	})
	if logs.has("node is leaving", "leaving=n2") {
		t.Fatal("the spoofed Leaving of n2 was taken")
	}
	// State from a node that was not asked for it: refused.
	p.send(t, n.Address(), "sluice-coordinator", &wire.HandoffChunk{Operator: "count", FirstGroup: 0, EndGroup: 10, Replace: true}, "a")
	sluicetest.WaitFor(t, 10*time.Second, "the unasked chunk dropped", func() bool {
		return logs.has("dropped a handoff chunk from a node not asked", "certificate=n1", "operator=count")
	})
	p.send(t, n.Address(), "sluice-coordinator", &wire.HandoffRequest{Operator: "count", Requester: "n2", EndGroup: 1}, "n2")
	sluicetest.WaitFor(t, 10*time.Second, "the spoofed HandoffRequest dropped", func() bool {
		return logs.has("dropped a message claiming", "message=HandoffRequest", "claims=n2", "certificate=n1")
	})
}

// TestNodeTransportRotatesCertificates: replaced files are used by the
// next connection, without a restart.
func TestNodeTransportRotatesCertificates(t *testing.T) {
	ca := credstest.NewCA(t, "cluster CA")
	logger, _ := newLogRecorder(t)
	n := startTLSNode(t, "a", ca.Node(t, "a"), logger)
	n1 := clientTLS(t, ca.Node(t, "n1"))
	serverSerial := func() (string, error) {
		c, err := tls.Dial("tcp", n.Address(), n1)
		if err != nil {
			return "", err
		}
		defer c.Close()
		if err := c.Handshake(); err != nil {
			return "", err
		}
		return c.ConnectionState().PeerCertificates[0].SerialNumber.String(), nil
	}
	before, err := serverSerial()
	if err != nil {
		t.Fatal(err)
	}
	ca.Node(t, "a") // a new certificate and key, written over the files
	sluicetest.WaitFor(t, 30*time.Second, "a new connection served with the new certificate", func() bool {
		s, err := serverSerial()
		return err == nil && s != before
	})
	if _, err := dialRaw(t, n.Address(), n1); err != nil {
		t.Fatalf("after the rotation: %v", err)
	}

	// A new CA: the node trusts the new one's nodes, and no longer the old.
	next := credstest.NewCA(t, "next CA")
	nf := next.Node(t, "a")
	certPEM, keyPEM := mustRead(t, nf.Cert), mustRead(t, nf.Key)
	sluicetest.Must(t, creds.WriteKeyPair(filepath.Join(ca.Dir, "a.pem"), certPEM, filepath.Join(ca.Dir, "a-key.pem"), keyPEM, true))
	sluicetest.Must(t, os.WriteFile(ca.CertFile, mustRead(t, next.CertFile), 0o644))
	nextN1 := clientTLS(t, next.Node(t, "n1"))
	sluicetest.WaitFor(t, 30*time.Second, "a node of the new CA accepted", func() bool {
		_, err := dialRaw(t, n.Address(), nextN1)
		return err == nil
	})
	oldClient := n1.Clone()
	oldClient.InsecureSkipVerify, oldClient.VerifyConnection = true, nil
	if _, err := dialRaw(t, n.Address(), oldClient); err == nil {
		t.Fatal("a node of the old CA still connects")
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestNodeTransportCertificateMustNameTheNode: a node refuses to start with
// a certificate named after another node.
func TestNodeTransportCertificateMustNameTheNode(t *testing.T) {
	ca := credstest.NewCA(t, "cluster CA")
	_, err := actors.Start(context.Background(), actors.Config{
		LocalStore: tpebble.Local,
		NodeID:     "a", DataDir: t.TempDir(), NoSync: true, Logger: sluicetest.Logger(t),
		Cluster: &actors.ClusterConfig{Discovery: memdisc.New(memdisc.NewRegistry()), Security: transport.Security{TLS: ca.Node(t, "b").Config()}},
	})
	if err == nil || !strings.Contains(err.Error(), `is named "b", but this node's id is "a"`) {
		t.Fatalf("got %v, want a refusal naming both", err)
	}
	_, err = actors.Start(context.Background(), actors.Config{
		LocalStore: tpebble.Local,
		NodeID:     "a", DataDir: t.TempDir(), NoSync: true, Logger: sluicetest.Logger(t),
		Cluster: &actors.ClusterConfig{Discovery: memdisc.New(memdisc.NewRegistry()), Security: transport.Security{TLS: creds.Config{CAFile: ca.CertFile}}},
	})
	if err == nil || !strings.Contains(err.Error(), "needs CertFile and KeyFile") {
		t.Fatalf("got %v, want a refusal naming the missing certificate", err)
	}
}
