package actors

// The node-to-node transport: protoactor remote over gRPC, with mutual TLS
// when ClusterConfig.Security is set (see TransportSecurity).
//
// protoactor hands a remote message to its actor without saying which
// connection it came over, so the transport says it: a gRPC stream
// interceptor learns the identity of the client certificate of each
// incoming stream and stamps it, as the message header peerHeader, on
// every message of the stream (replacing whatever the sender put there).
// Actors read it with peerOf and drop messages whose claimed sender node is
// not that identity (Node.vouched).

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strconv"
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

	"github.com/sluicehq/sluice/actors/handoff"
	"github.com/sluicehq/sluice/cluster"
	"github.com/sluicehq/sluice/creds"
)

// peerHeader is the message header in which the transport names the node
// (the identity of its certificate) a remote message came from.
const peerHeader = "sluice-peer"

// transport holds a node's transport credentials. Its methods are safe for
// concurrent use.
type transport struct {
	src   *creds.Source
	log   *slog.Logger
	addrs atomic.Pointer[map[string]string] // actor address → member id

	mu         sync.Mutex // guards lastWarn and suppressed
	lastWarn   time.Time
	suppressed int
}

// newTransport loads and watches the credentials of sec; the certificate
// must be named nodeID.
func newTransport(sec TransportSecurity, nodeID string, log *slog.Logger) (*transport, error) {
	cfg := sec.TLS
	if cfg.Logger == nil {
		cfg.Logger = log
	}
	src, err := creds.Load(cfg)
	if err != nil {
		return nil, fmt.Errorf("actors: node transport TLS: %w", err)
	}
	if id := creds.Identity(src.Leaf()); !speaksFor(id, nodeID) {
		_ = src.Close()
		return nil, fmt.Errorf("actors: node transport TLS: the certificate %s is named %q, but this node's id is %q, and other nodes "+
			"drop messages of node %q that do not come over a certificate named so; issue one with \"sluice certs node %s\"",
			cfg.CertFile, id, nodeID, nodeID, nodeID)
	}
	if err := src.Watch(); err != nil {
		_ = src.Close()
		return nil, fmt.Errorf("actors: node transport TLS: %w", err)
	}
	return &transport{src: src, log: log}, nil
}

// close stops watching the files.
func (t *transport) close() { _ = t.src.Close() }

// options returns protoactor remote's options for mutual TLS, its server
// taking the options base too.
func (t *transport) options(base []grpc.ServerOption) ([]remote.ConfigOption, error) {
	srv, err := t.src.ServerTLS(creds.RequireClientCert)
	if err != nil {
		return nil, fmt.Errorf("actors: node transport TLS: %w", err)
	}
	c := &nodeCreds{t: t, server: credentials.NewTLS(srv)}
	return []remote.ConfigOption{
		remote.WithServerOptions(append([]grpc.ServerOption{grpc.Creds(c), grpc.StreamInterceptor(t.intercept)}, base...)...),
		remote.WithDialOptions(grpc.WithTransportCredentials(c)),
	}, nil
}

// setMembers records the actor address of every member, so that a
// connection to an address verifies that the server is that member.
func (t *transport) setMembers(members []cluster.Member) {
	m := make(map[string]string, len(members))
	for _, mb := range members {
		m[mb.Address] = mb.ID
	}
	t.addrs.Store(&m)
}

// nodeAt returns the id of the member at actor address addr, or "".
func (t *transport) nodeAt(addr string) string {
	if m := t.addrs.Load(); m != nil {
		return (*m)[addr]
	}
	return ""
}

// warn logs a refused connection, at most once a second (a port scanner
// must not flood the log); it says how many it did not log.
func (t *transport) warn(msg string, attrs ...any) {
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
func (t *transport) intercept(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
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
func (t *transport) peer(ctx context.Context) (string, error) {
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
	t      *transport
	server credentials.TransportCredentials
}

var _ credentials.TransportCredentials = (*nodeCreds)(nil)

// ClientHandshake runs the TLS handshake of a connection to authority (the
// actor address dialled): the server's certificate must be signed by the
// CA bundle and, when authority is a member's address, speak for that
// member (speaksFor).
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
		if !speaksFor(id, node) {
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

// speaksFor reports whether a certificate named identity may speak for
// node: the node of that name, or an operator process its launcher
// started, whose node id is "<operator>-<identity>-<restarts>" (package
// launcher) and which is given the launching node's certificate and key:
// it runs as that node's user, with its files, so the node's key is the
// boundary of trust either way.
func speaksFor(identity, node string) bool {
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

// peerOf returns the node a message being handled came from, as the
// transport stamped it: "" for a message from this node, or when the
// transport has no TLS.
func peerOf(ctx actor.Context) string {
	h := ctx.MessageHeader()
	if h == nil {
		return ""
	}
	return h.Get(peerHeader)
}

// vouched reports whether the message being handled, which claims to come
// from node claimed, came from this node or over claimed's certificate. It
// logs a message that did not, which the caller drops. Without transport
// TLS every claim is taken.
func (n *Node) vouched(ctx actor.Context, what, claimed string) bool {
	if n.transport == nil {
		return true
	}
	p := peerOf(ctx)
	if p == "" || speaksFor(p, claimed) {
		return true
	}
	n.log.Warn("dropped a message claiming to come from another node than the certificate it came over",
		"message", what, "claims", claimed, "certificate", p)
	return false
}

// endpointQueueSize is the first size of protoactor's send queue to each
// peer (see startRemote).
const endpointQueueSize = 4096

// endpointBatchSize is the most messages protoactor bundles into one gRPC
// message to a peer (its default is 1,000): with messageLimit, it bounds
// what a peer may send in one.
const endpointBatchSize = 16

// messageLimit is the largest gRPC message a node takes from a peer: a
// bundle of endpointBatchSize messages, each at most a batch of BatchBytes
// or a record of MaxRecordBytes, or a handoff chunk, with room for their
// framing (a few bytes a record, and the batch's fields). gRPC's default
// of 4 MB refused a bundle of large records, and with it every batch after
// (the stream broke and the batches stayed in flight).
func (n *Node) messageLimit() int {
	msg := max(n.cfg.BatchBytes, n.cfg.MaxRecordBytes, handoff.ChunkBytes) + 64*max(n.cfg.BatchSize, n.cfg.RemoteBatchSize) + 64<<10
	return endpointBatchSize * msg
}

// startRemote starts protoactor remote on the configured address, with
// mutual TLS when configured.
func (n *Node) startRemote() error {
	cc := n.cfg.Cluster
	host, portStr, err := net.SplitHostPort(cc.BindAddr)
	if err != nil {
		return fmt.Errorf("actors: bind address %q: %w", cc.BindAddr, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return fmt.Errorf("actors: bind address %q: bad port: %w", cc.BindAddr, err)
	}
	// protoactor preallocates each peer's send queue at 1,000,000 slots:
	// 16 MB of pointers per peer, allocated when the first message to it
	// is sent and scanned by every collection after. The queue grows by
	// doubling when it fills, so its first size bounds nothing.
	opts := []remote.ConfigOption{remote.WithEndpointWriterQueueSize(endpointQueueSize), remote.WithEndpointWriterBatchSize(endpointBatchSize)}
	server := []grpc.ServerOption{grpc.UnaryInterceptor(refuseUnary), grpc.MaxRecvMsgSize(n.messageLimit())}
	if cc.Security.Enabled() {
		if n.transport, err = newTransport(cc.Security, n.cfg.NodeID, n.log); err != nil {
			return err
		}
		topts, err := n.transport.options(server)
		if err != nil {
			n.transport.close()
			return err
		}
		opts = append(opts, topts...)
	} else {
		opts = append(opts, remote.WithServerOptions(server...))
		if !isLoopback(host) {
			n.log.Warn("node-to-node traffic is not authenticated: anyone who reaches this address can send records to the node, "+
				"replace its state or make it take over instances; set the node transport TLS (-node-ca, -node-cert, -node-key; "+
				"$SLUICE_NODE_*), see docs/security.md", "bind", cc.BindAddr)
		}
	}
	if port == 0 {
		// protoactor cannot report the port it picked before it listens, so
		// pick a free one first.
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return fmt.Errorf("actors: bind %s: %w", cc.BindAddr, err)
		}
		port = l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
	}
	if cc.AdvertiseAddr != "" {
		opts = append(opts, remote.WithAdvertisedHost(cc.AdvertiseAddr))
	}
	n.remote = remote.NewRemote(n.system, remote.Configure(host, port, opts...))
	started := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil { // remote.Start panics when it cannot listen
				started <- fmt.Errorf("actors: start remote on %s:%d: %v", host, port, r)
			}
		}()
		n.remote.Start()
		started <- nil
	}()
	return <-started
}

// isLoopback reports whether host (of a bind address) is a loopback name
// or address; "" and unspecified addresses (all interfaces) are not.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
