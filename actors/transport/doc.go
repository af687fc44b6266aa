// Package transport is the node-to-node transport: protoactor remote over
// gRPC (Start), with mutual TLS when Security is enabled (TLS: each
// incoming stream authenticated by its client certificate, whose identity
// is stamped on every message; PeerOf reads it and SpeaksFor says whether
// it may speak for a node; a connection to a member's address verifies
// that the server is that member), and the addressing of actor ids to one
// node process (Addressed, Ours, Misaddressed).
//
// The package does not know the node: package actors starts it with a
// Config, tells it the membership (TLS.SetMembers) and checks what its
// messages claim against PeerOf.
//
// # Files
//
//	remote.go       Config, Start: protoactor remote with its limits
//	tls.go          TLS: credentials, the stream interceptor, handshakes; PeerOf, SpeaksFor
//	security.go     Security: the settings, flags and SLUICE_NODE_* variables
//	addressing.go   actor ids addressed to one node process; refusals
package transport
