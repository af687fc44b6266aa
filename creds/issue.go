package creds

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Usage says what an issued certificate is for.
type Usage int

const (
	// NodeUsage: a node's certificate, for its servers (control API,
	// node-to-node) and for its connections to other nodes.
	NodeUsage Usage = iota
	// ClientUsage: a client's certificate (an operator's CLI, a tool).
	ClientUsage
)

// String returns the usage's name.
func (u Usage) String() string {
	switch u {
	case NodeUsage:
		return "node"
	case ClientUsage:
		return "client"
	}
	return fmt.Sprintf("Usage(%d)", int(u))
}

// Authority is a CA that issues certificates: its certificate and key.
type Authority struct {
	Cert *x509.Certificate
	Key  crypto.Signer
	// CertPEM and KeyPEM are Cert and Key in PEM (the key in PKCS #8).
	CertPEM, KeyPEM []byte
}

// Request describes a certificate to issue.
type Request struct {
	// Name is the subject common name: the certificate's identity (for a
	// node, its node id). Required.
	Name string
	// DNSNames and IPs are the names and addresses a server certificate is
	// valid for (its subject alternative names).
	DNSNames []string
	IPs      []net.IP
	Usage    Usage
	// NotBefore is when validity begins; zero means a minute ago (to
	// allow for clock skew).
	NotBefore time.Time
	// Valid is how long it is valid from NotBefore; required.
	Valid time.Duration
}

// NewCA makes a self-signed CA named name, valid for valid, with a new
// ECDSA P-256 key.
func NewCA(name string, valid time.Duration) (*Authority, error) {
	if name == "" || valid <= 0 {
		return nil, fmt.Errorf("creds: new CA: want a name and a validity > 0, got %q and %v", name, valid)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("creds: new CA: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(valid),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
		SubjectKeyId:          keyID(&key.PublicKey),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("creds: new CA: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("creds: new CA: %w", err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, err
	}
	return &Authority{Cert: cert, Key: key, CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), KeyPEM: keyPEM}, nil
}

// LoadAuthority reads a CA's certificate and key from PEM files.
func LoadAuthority(certFile, keyFile string) (*Authority, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("%w: CA certificate: %w", ErrBadFile, err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("%w: CA key: %w", ErrBadFile, err)
	}
	cb, _ := pem.Decode(certPEM)
	if cb == nil || cb.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("%w: CA certificate %s holds no PEM CERTIFICATE block", ErrBadFile, certFile)
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%w: CA certificate %s: %w", ErrBadFile, certFile, err)
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("%w: %s is not a CA certificate (basic constraints)", ErrBadFile, certFile)
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil {
		return nil, fmt.Errorf("%w: CA key %s holds no PEM block", ErrBadFile, keyFile)
	}
	var key any
	switch kb.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(kb.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(kb.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(kb.Bytes)
	default:
		err = fmt.Errorf("unsupported PEM block %q", kb.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: CA key %s: %w", ErrBadFile, keyFile, err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%w: CA key %s cannot sign", ErrBadFile, keyFile)
	}
	if pub, ok := signer.Public().(interface{ Equal(crypto.PublicKey) bool }); !ok || !pub.Equal(cert.PublicKey) {
		return nil, fmt.Errorf("%w: CA key %s does not belong to the certificate %s", ErrBadFile, keyFile, certFile)
	}
	return &Authority{Cert: cert, Key: signer, CertPEM: certPEM, KeyPEM: keyPEM}, nil
}

// Issue makes a certificate for req signed by a, with a new ECDSA P-256
// key, and returns both in PEM (the key in PKCS #8).
func (a *Authority) Issue(req Request) (certPEM, keyPEM []byte, err error) {
	if req.Name == "" {
		return nil, nil, errors.New("creds: issue: Name is required (the certificate's identity)")
	}
	if req.Valid <= 0 {
		return nil, nil, fmt.Errorf("creds: issue %s: Valid must be > 0, got %v", req.Name, req.Valid)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("creds: issue %s: %w", req.Name, err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, nil, err
	}
	notBefore := req.NotBefore
	if notBefore.IsZero() {
		notBefore = time.Now().Add(-time.Minute)
	}
	tmpl := &x509.Certificate{
		SerialNumber:   serial,
		Subject:        pkix.Name{CommonName: req.Name},
		NotBefore:      notBefore,
		NotAfter:       notBefore.Add(req.Valid),
		KeyUsage:       x509.KeyUsageDigitalSignature,
		DNSNames:       req.DNSNames,
		IPAddresses:    req.IPs,
		SubjectKeyId:   keyID(&key.PublicKey),
		AuthorityKeyId: a.Cert.SubjectKeyId,
	}
	switch req.Usage {
	case NodeUsage:
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	case ClientUsage:
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	default:
		return nil, nil, fmt.Errorf("creds: issue %s: unknown usage %v", req.Name, req.Usage)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.Cert, &key.PublicKey, a.Key)
	if err != nil {
		return nil, nil, fmt.Errorf("creds: issue %s: %w", req.Name, err)
	}
	keyPEM, err = encodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

// WriteKeyPair writes a certificate (mode 0644) and its key (mode 0600).
// It refuses to replace existing files unless overwrite is set; a
// replaced key file gets mode 0600 too.
func WriteKeyPair(certFile string, certPEM []byte, keyFile string, keyPEM []byte, overwrite bool) error {
	if !overwrite {
		for _, f := range []string{certFile, keyFile} {
			if _, err := os.Lstat(f); err == nil {
				return fmt.Errorf("creds: %s exists; remove it or overwrite it on purpose", f)
			}
		}
	}
	if err := writeFile(keyFile, keyPEM, 0o600); err != nil {
		return err
	}
	return writeFile(certFile, certPEM, 0o644)
}

// writeFile writes data to a temporary file in path's directory with
// mode, then renames it over path, so that a watcher never sees half a
// file and a key is never readable by others, even briefly.
func writeFile(path string, data []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("creds: write %s: %w", path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a successful rename there is nothing to remove
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return fmt.Errorf("creds: write %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("creds: write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("creds: write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("creds: write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("creds: write %s: %w", path, err)
	}
	return nil
}

// newSerial returns a random 128-bit serial number.
func newSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("creds: serial number: %w", err)
	}
	return n.Add(n, big.NewInt(1)), nil // never 0
}

// keyID is a subject key identifier: a hash of the public key.
func keyID(pub *ecdsa.PublicKey) []byte {
	b, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil
	}
	h := sha256.Sum256(b)
	return h[:20]
}

// encodeKey encodes an ECDSA key as PKCS #8 PEM.
func encodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("creds: encode key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}
