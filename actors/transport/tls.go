package transport

// Mutual TLS on the node-to-node transport, when ClusterConfig.Security is
// set (see Security).
//
// protoactor hands a remote message to its actor without saying which
// connection it came over, so the transport says it: a gRPC stream
// interceptor learns the identity of the client certificate of each
// incoming stream and stamps it, as the message header peerHeader, on
// every message of the stream (replacing whatever the sender put there).
// Actors read it with PeerOf and drop messages whose claimed sender node is
// not that identity (actors.Node.vouched).

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/sluicehq/sluice/cluster"
	"github.com/sluicehq/sluice/creds"
)

// peerHeader is the message header in which the transport names the node
// (the identity of its certificate) a remote message came from.
const peerHeader = "sluice-peer"

// TLS holds a node's transport credentials. Its methods are safe for
// concurrent use.
type TLS struct {
	src   *creds.Source
	log   *slog.Logger
	addrs atomic.Pointer[map[string]string] // actor address → member id

	mu         sync.Mutex // guards lastWarn and suppressed
	lastWarn   time.Time
	suppressed int
}

// newTLS loads and watches the credentials of sec; the certificate must
// be named nodeID.
func newTLS(sec Security, nodeID string, log *slog.Logger) (*TLS, error) {
	cfg := sec.TLS
	if cfg.Logger == nil {
		cfg.Logger = log
	}
	src, err := creds.Load(cfg)
	if err != nil {
		return nil, fmt.Errorf("transport: node TLS: %w", err)
	}
	if id := creds.Identity(src.Leaf()); !SpeaksFor(id, nodeID) {
		_ = src.Close()
		return nil, fmt.Errorf("transport: node TLS: the certificate %s is named %q, but this node's id is %q, and other nodes "+
			"drop messages of node %q that do not come over a certificate named so; issue one with \"sluice certs node %s\"",
			cfg.CertFile, id, nodeID, nodeID, nodeID)
	}
	if err := src.Watch(); err != nil {
		_ = src.Close()
		return nil, fmt.Errorf("transport: node TLS: %w", err)
	}
	return &TLS{src: src, log: log}, nil
}

// Close stops watching the files.
func (t *TLS) Close() { _ = t.src.Close() }

// options returns protoactor remote's options for mutual TLS, its server
// taking the options base too.
func (t *TLS) options(base []grpc.ServerOption) ([]remote.ConfigOption, error) {
	srv, err := t.src.ServerTLS(creds.RequireClientCert)
	if err != nil {
		return nil, fmt.Errorf("transport: node TLS: %w", err)
	}
	c := &nodeCreds{t: t, server: credentials.NewTLS(srv)}
	return []remote.ConfigOption{
		remote.WithServerOptions(append([]grpc.ServerOption{grpc.Creds(c), grpc.StreamInterceptor(t.intercept)}, base...)...),
		remote.WithDialOptions(grpc.WithTransportCredentials(c)),
	}, nil
}

// SetMembers records the actor address of every member, so that a
// connection to an address verifies that the server is that member.
func (t *TLS) SetMembers(members []cluster.Member) {
	m := make(map[string]string, len(members))
	for _, mb := range members {
		m[mb.Address] = mb.ID
	}
	t.addrs.Store(&m)
}

// nodeAt returns the id of the member at actor address addr, or "".
func (t *TLS) nodeAt(addr string) string {
	if m := t.addrs.Load(); m != nil {
		return (*m)[addr]
	}
	return ""
}

// warn logs a refused connection, at most once a second (a port scanner
// must not flood the log); it says how many it did not log.
func (t *TLS) warn(msg string, attrs ...any) {
	t.mu.Lock()
	now := time.Now()
	if now.Sub(t.lastWarn) < time.Second {
		t.suppressed++
		t.mu.Unlock()
		return
	}
	n := t.suppressed
	t.lastWarn, t.suppressed = now, 0
	t.mu.Unlock()
	if n > 0 {
		attrs = append(attrs, "not_logged_since", n)
	}
	t.log.Warn(msg, attrs...)
}

// intercept authenticates a stream of protoactor's Remoting service by its
// client certificate and stamps every message it receives with the
// certificate's identity.
func (t *TLS) intercept(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	id, err := t.peer(ss.Context())
	if err != nil {
		// Not rate limited: the peer got through the handshake, so it holds
		// a certificate of the CA.
		t.log.Warn("node transport: refused a stream", "method", info.FullMethod, "error", err)
		return status.Errorf(codes.Unauthenticated, "sluice: %v", err)
	}
	hdr := &remote.MessageHeader{HeaderData: map[string]string{peerHeader: id}}
	return handler(srv, &stampingStream{ServerStream: ss, peer: id, shared: hdr})
}

// peer returns the identity of the verified client certificate of the
// connection ctx belongs to.
func (t *TLS) peer(ctx context.Context) (string, error) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return "", errors.New("no peer information")
	}
	ti, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok {
		return "", fmt.Errorf("connection from %v is not TLS", p.Addr)
	}
	id, err := t.src.ClientIdentity(ti.State)
	if err != nil {
		return "", fmt.Errorf("connection from %v: %w", p.Addr, err)
	}
	if id == "" {
		return "", fmt.Errorf("connection from %v: the certificate has no name (common name or DNS name) to identify a node", p.Addr)
	}
	// A node's certificate serves too ("sluice certs node"); a client-only
	// certificate of the same CA (an operator's, for the control API) may
	// not speak for a node.
	leaf := ti.State.PeerCertificates[0]
	if !slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageServerAuth) && !slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageAny) {
		return "", fmt.Errorf("connection from %v: %w: %q is not a node's certificate (it lacks the serverAuth extended key usage that "+
			"\"sluice certs node\" gives)", p.Addr, creds.ErrUsage, id)
	}
	return id, nil
}

// refuseUnary refuses every unary call: protoactor's Remoting service has
// two (ListProcesses, GetProcessDiagnostics) that are not implemented and
// panic, which would crash the node.
func refuseUnary(context.Context, any, *grpc.UnaryServerInfo, grpc.UnaryHandler) (any, error) {
	return nil, status.Error(codes.Unimplemented, "sluice: not served")
}

// stampingStream is a server stream of protoactor's Remoting service whose
// received messages are stamped with the peer's identity.
type stampingStream struct {
	grpc.ServerStream
	peer   string
	shared *remote.MessageHeader // {peerHeader: peer}, for envelopes without headers; read only
}

// RecvMsg receives a message and sets peerHeader on every envelope of a
// message batch, replacing any value the sender gave.
func (s *stampingStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	rm, ok := m.(*remote.RemoteMessage)
	if !ok {
		return nil
	}
	b := rm.GetMessageBatch()
	if b == nil {
		return nil
	}
	for _, e := range b.Envelopes {
		if e.MessageHeader == nil || len(e.MessageHeader.HeaderData) == 0 {
			e.MessageHeader = s.shared
			continue
		}
		h := maps.Clone(e.MessageHeader.HeaderData)
		h[peerHeader] = s.peer
		e.MessageHeader = &remote.MessageHeader{HeaderData: h}
	}
	return nil
}

// nodeCreds are gRPC transport credentials for both ends of node-to-node
// connections. A client verifies that the server is the member at the
// address it dialled (creds.Source.PeerTLS), or, for an address not in the
// membership, some node of the CA (ClusterTLS).
type nodeCreds struct {
	t      *TLS
	server credentials.TransportCredentials
}

var _ credentials.TransportCredentials = (*nodeCreds)(nil)

// ClientHandshake runs the TLS handshake of a connection to authority (the
// actor address dialled): the server's certificate must be signed by the
// CA bundle and, when authority is a member's address, speak for that
// member (SpeaksFor).
func (c *nodeCreds) ClientHandshake(ctx context.Context, authority string, conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	node := c.t.nodeAt(authority)
	cfg, err := c.t.src.ClusterTLS()
	if err != nil {
		return nil, nil, err
	}
	out, info, err := credentials.NewTLS(cfg).ClientHandshake(ctx, authority, conn)
	if err == nil && node != "" {
		var id string
		if ti, ok := info.(credentials.TLSInfo); ok && len(ti.State.PeerCertificates) > 0 {
			id = creds.Identity(ti.State.PeerCertificates[0])
		}
		if !SpeaksFor(id, node) {
			_ = out.Close()
			err = fmt.Errorf("%w: the server at %s presented the certificate of %q, want that of member %q", creds.ErrNameMismatch, authority, id, node)
		}
	}
	if err != nil {
		c.t.warn("node transport: cannot connect to a node", "address", authority, "member", node, "error", err)
		return nil, nil, err
	}
	return out, info, nil
}

// SpeaksFor reports whether a certificate named identity may speak for
// node: the node of that name, or an operator process its launcher
// started, whose node id is "<operator>-<identity>-<restarts>" (package
// launcher) and which is given the launching node's certificate and key:
// it runs as that node's user, with its files, so the node's key is the
// boundary of trust either way.
func SpeaksFor(identity, node string) bool {
	if identity == "" {
		return false
	}
	if node == identity {
		return true
	}
	i := strings.LastIndexByte(node, '-')
	if i < 0 || i == len(node)-1 || strings.Trim(node[i+1:], "0123456789") != "" {
		return false
	}
	rest, ok := strings.CutSuffix(node[:i], "-"+identity)
	return ok && rest != ""
}

// ServerHandshake runs the TLS handshake of an accepted connection.
func (c *nodeCreds) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	out, info, err := c.server.ServerHandshake(conn)
	if err != nil {
		c.t.warn("node transport: refused a connection", "from", conn.RemoteAddr().String(), "error", err)
	}
	return out, info, err
}

// Info returns the protocol's description.
func (c *nodeCreds) Info() credentials.ProtocolInfo { return c.server.Info() }

// Clone returns a copy of c.
func (c *nodeCreds) Clone() credentials.TransportCredentials {
	return &nodeCreds{t: c.t, server: c.server.Clone()}
}

// OverrideServerName does nothing: servers are verified by node identity.
//
// Deprecated: as in gRPC.
func (c *nodeCreds) OverrideServerName(string) error { return nil }

// PeerOf returns the node a message being handled came from, as the
// transport stamped it: "" for a message from this node, or when the
// transport has no TLS.
func PeerOf(ctx actor.Context) string {
	h := ctx.MessageHeader()
	if h == nil {
		return ""
	}
	return h.Get(peerHeader)
}
