package transport

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
)

// endpointQueueSize is the first size of protoactor's send queue to each
// peer (see Start).
const endpointQueueSize = 4096

// EndpointBatchSize is the most messages protoactor bundles into one gRPC
// message to a peer (its default is 1,000): with Config.MessageLimit, it
// bounds what a peer may send in one.
const EndpointBatchSize = 16

// Config configures a node's transport (Start).
type Config struct {
	// NodeID is the node's id: its certificate must be named so.
	NodeID string
	// BindAddr is the host:port to listen on (port 0: one picked now);
	// AdvertiseAddr, when set, the host other nodes reach it at.
	BindAddr, AdvertiseAddr string
	// Security configures mutual TLS (zero: none).
	Security Security
	// MessageLimit is the largest gRPC message the node takes from a peer.
	MessageLimit int
	Log          *slog.Logger
}

// Start starts protoactor remote for system on cfg.BindAddr, with mutual
// TLS when cfg.Security is enabled (tls is then not nil; its owner closes
// it after shutting remote down). On an error nothing is left open but
// system.
func Start(system *actor.ActorSystem, cfg Config) (r *remote.Remote, tls *TLS, err error) {
	host, portStr, err := net.SplitHostPort(cfg.BindAddr)
	if err != nil {
		return nil, nil, fmt.Errorf("transport: bind address %q: %w", cfg.BindAddr, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, nil, fmt.Errorf("transport: bind address %q: bad port: %w", cfg.BindAddr, err)
	}
	// protoactor preallocates each peer's send queue at 1,000,000 slots:
	// 16 MB of pointers per peer, allocated when the first message to it
	// is sent and scanned by every collection after. The queue grows by
	// doubling when it fills, so its first size bounds nothing.
	opts := []remote.ConfigOption{remote.WithEndpointWriterQueueSize(endpointQueueSize), remote.WithEndpointWriterBatchSize(EndpointBatchSize)}
	server := []grpc.ServerOption{grpc.UnaryInterceptor(refuseUnary), grpc.MaxRecvMsgSize(cfg.MessageLimit)}
	if cfg.Security.Enabled() {
		if tls, err = newTLS(cfg.Security, cfg.NodeID, cfg.Log); err != nil {
			return nil, nil, err
		}
		topts, err := tls.options(server)
		if err != nil {
			tls.Close()
			return nil, nil, err
		}
		opts = append(opts, topts...)
	} else {
		opts = append(opts, remote.WithServerOptions(server...))
		if !isLoopback(host) {
			cfg.Log.Warn("node-to-node traffic is not authenticated: anyone who reaches this address can send records to the node, "+
				"replace its state or make it take over instances; set the node transport TLS (-node-ca, -node-cert, -node-key; "+
				"$SLUICE_NODE_*), see docs/security.md", "bind", cfg.BindAddr)
		}
	}
	fail := func(err error) (*remote.Remote, *TLS, error) {
		if tls != nil {
			tls.Close()
		}
		return nil, nil, err
	}
	if port == 0 {
		// protoactor cannot report the port it picked before it listens, so
		// pick a free one first.
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return fail(fmt.Errorf("transport: bind %s: %w", cfg.BindAddr, err))
		}
		port = l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
	}
	if cfg.AdvertiseAddr != "" {
		opts = append(opts, remote.WithAdvertisedHost(cfg.AdvertiseAddr))
	}
	r = remote.NewRemote(system, remote.Configure(host, port, opts...))
	started := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil { // remote.Start panics when it cannot listen
				started <- fmt.Errorf("transport: start remote on %s:%d: %v", host, port, r)
			}
		}()
		r.Start()
		started <- nil
	}()
	if err := <-started; err != nil {
		return fail(err)
	}
	return r, tls, nil
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
