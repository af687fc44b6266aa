package creds

import "errors"

// Errors of package creds. Callers branch on them with errors.Is; the
// errors returned carry the file names and details around them.
var (
	// ErrNoCertificate: a server needs a certificate and key (CertFile,
	// KeyFile), and none is configured.
	ErrNoCertificate = errors.New("creds: no certificate configured")
	// ErrNoCA: verifying client certificates needs a CA bundle (CAFile),
	// and none is configured.
	ErrNoCA = errors.New("creds: no CA bundle configured")
	// ErrUnknownAuthority: a peer's certificate is not signed by a CA of
	// the bundle.
	ErrUnknownAuthority = errors.New("creds: certificate not signed by a trusted CA")
	// ErrExpired: a certificate's validity ended.
	ErrExpired = errors.New("creds: certificate expired")
	// ErrNotYetValid: a certificate's validity has not begun.
	ErrNotYetValid = errors.New("creds: certificate not yet valid")
	// ErrNameMismatch: a server's certificate is not valid for the name or
	// address the client dialled.
	ErrNameMismatch = errors.New("creds: certificate not valid for the name")
	// ErrUsage: a certificate may not be used for what it was presented
	// for (a server-only certificate presented by a client, say).
	ErrUsage = errors.New("creds: certificate not valid for this use")
	// ErrUntrusted: a peer's certificate chain failed verification for
	// another reason (a CA not allowed to sign, a name constraint).
	ErrUntrusted = errors.New("creds: certificate chain not trusted")
	// ErrNoPeerCertificate: the peer presented no certificate.
	ErrNoPeerCertificate = errors.New("creds: the peer presented no certificate")
	// ErrBadFile: a file could not be read or does not hold what it
	// should.
	ErrBadFile = errors.New("creds: bad credentials file")
)
