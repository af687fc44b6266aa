// Package creds holds the credentials Sluice's servers and clients use: a
// CA bundle with a certificate and its key (for TLS and mutual TLS), and
// bearer tokens, all read from files and reloaded when the files change,
// without a restart.
//
// A Source is one set of TLS files. Load reads and checks them (every
// error names the file); Watch starts a goroutine that reloads them when
// they change (file system events in their directories, and a poll every
// Config.PollInterval as a fallback); Close stops it. A reload that fails
// (a half-written file, a key that does not match the new certificate, an
// expired certificate) keeps the credentials in use and is logged; the
// next change is tried again.
//
// The tls.Config values that ServerTLS and ClientTLS build take the
// current certificate and CA at every handshake, so they never need to be
// rebuilt: a server keeps its listener, a client its transport.
// Verification of the peer's certificate is done by this package against
// the CA bundle current at handshake time, and a failure is a
// *VerifyError that says what was wrong (not signed by the CA in which
// file, expired, not valid for the name dialled).
//
//	src, err := creds.Load(creds.Config{CAFile: "ca.pem", CertFile: "n1.pem", KeyFile: "n1-key.pem"})
//	if err != nil { … }
//	if err := src.Watch(); err != nil { … }
//	defer src.Close()
//	serverTLS, _ := src.ServerTLS(creds.RequireClientCert) // mutual TLS
//	clientTLS, _ := src.ClientTLS("10.0.0.2")              // verifies the server, presents n1.pem
//	peerTLS, _ := src.PeerTLS("n2")                        // verifies the server is node n2
//	// in a handler: who is the client?
//	id, err := src.ClientIdentity(*r.TLS)                  // "n2": the certificate's name
//
// A certificate's identity (Identity) is its subject common name, or its
// first DNS name when the common name is empty. Sluice uses it as the
// node identity between nodes (a node's certificate is named after the
// node) and to map client certificates to roles on the control API.
//
// Tokens is a set of bearer tokens, each with a label (a role), read from
// a file of "label:token" lines and reloaded like a Source; Lookup
// compares in constant time.
//
// NewCA, Authority.Issue and WriteKeyPair make a development CA and
// certificates for nodes and clients (ECDSA P-256), as the
// "sluice certs" command does.
package creds
