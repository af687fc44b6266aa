package creds

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"errors"
	"fmt"
)

// ErrNoKey is returned by Sign when the credentials hold no certificate
// and key to sign with.
var ErrNoKey = errors.New("creds: no certificate and key to sign with")

// Sign signs payload with the current certificate's private key, as a
// node vouches for what it writes to a store others can write to too (the
// cluster's topology in Consul). It returns the certificate chain (DER,
// leaf first) and the signature: ECDSA or RSA PKCS #1 v1.5 over payload's
// SHA-256, or Ed25519 over payload, by the key's type.
func (s *Source) Sign(payload []byte) (chain [][]byte, sig []byte, err error) {
	m := s.cur.Load()
	if m.cert == nil || m.leaf == nil {
		return nil, nil, ErrNoKey
	}
	key, ok := m.cert.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, nil, fmt.Errorf("creds: the key in %s cannot sign (%T)", s.cfg.KeyFile, m.cert.PrivateKey)
	}
	switch key.(type) {
	case ed25519.PrivateKey:
		sig, err = key.Sign(rand.Reader, payload, crypto.Hash(0))
	case *ecdsa.PrivateKey, *rsa.PrivateKey:
		sum := sha256.Sum256(payload)
		sig, err = key.Sign(rand.Reader, sum[:], crypto.SHA256)
	default:
		return nil, nil, fmt.Errorf("creds: signing with a %T key (of %s) is not supported", key, s.cfg.KeyFile)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("creds: sign with %s: %w", s.cfg.KeyFile, err)
	}
	return m.cert.Certificate, sig, nil
}

// CheckSigned verifies that sig is a signature of payload by the key of a
// node certificate (one a node's transport would accept) signed by the
// current CA bundle and valid now, whose chain is given leaf first; it
// returns the certificate's identity. A certificate of another CA, an
// expired one or a client-only one is a *VerifyError; a wrong signature is
// an error saying so.
func (s *Source) CheckSigned(payload []byte, chain [][]byte, sig []byte) (string, error) {
	if s.cur.Load().roots == nil {
		return "", fmt.Errorf("%w: checking signatures needs CAFile", ErrNoCA)
	}
	if len(chain) == 0 {
		return "", errors.New("creds: no certificate with the signature")
	}
	certs := make([]*x509.Certificate, len(chain))
	for i, der := range chain {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return "", fmt.Errorf("creds: the signature's certificate %d: %w", i, err)
		}
		certs[i] = c
	}
	leaf, err := s.verify(certs, "", x509.ExtKeyUsageServerAuth, "signer")
	if err != nil {
		return "", err
	}
	var alg x509.SignatureAlgorithm
	switch leaf.PublicKey.(type) {
	case *ecdsa.PublicKey:
		alg = x509.ECDSAWithSHA256
	case *rsa.PublicKey:
		alg = x509.SHA256WithRSA
	case ed25519.PublicKey:
		alg = x509.PureEd25519
	default:
		return "", fmt.Errorf("creds: %q signs with an unsupported %T key", Identity(leaf), leaf.PublicKey)
	}
	if err := leaf.CheckSignature(alg, payload, sig); err != nil {
		return "", fmt.Errorf("creds: the signature is not %q's: %w", Identity(leaf), err)
	}
	return Identity(leaf), nil
}
