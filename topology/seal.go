package topology

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/sluicehq/sluice/creds"
)

// ErrUnsealed marks a topology in the store that no node of the cluster
// signed: written around the control API (straight into Consul's KV, by
// whoever has a token for it), or by a node without node certificates.
var ErrUnsealed = errors.New("topology: not signed by a node of the cluster")

// Seal is the signature of the node that stored a topology, over
// SealPayload. Guard adds it to what it stores and checks it in what it
// reads, when it has a Sealer.
type Seal struct {
	// Signer is the identity of the node's certificate.
	Signer string
	// Chain is the node's certificate chain (DER, leaf first).
	Chain [][]byte
	// Sig is the signature.
	Sig []byte
}

// Sealer signs the topologies a node stores and checks those it reads: a
// topology in a store that others can write to (Consul's KV) is acted on
// only if a node of the cluster wrote it.
type Sealer interface {
	// Sign returns this node's seal of payload.
	Sign(payload []byte) (Seal, error)
	// Check verifies seal over payload: signed by a node of the cluster.
	Check(payload []byte, seal Seal) error
}

// SealPayload returns the bytes a topology's Seal signs: t's JSON without
// its Seal. Encoding a topology decoded from JSON gives the bytes it was
// decoded from again, so a node checks what another signed.
func SealPayload(t Topology) ([]byte, error) {
	t.Seal = nil
	b, err := json.Marshal(t)
	if err != nil {
		return nil, fmt.Errorf("topology: encode version %d to seal: %w", t.Version, err)
	}
	return b, nil
}

// sealed returns t with s's seal (t unchanged when s is nil).
func sealed(s Sealer, t Topology) (Topology, error) {
	if s == nil {
		return t, nil
	}
	p, err := SealPayload(t)
	if err != nil {
		return Topology{}, err
	}
	seal, err := s.Sign(p)
	if err != nil {
		return Topology{}, fmt.Errorf("topology: sign version %d: %w", t.Version, err)
	}
	t.Seal = &seal
	return t, nil
}

// sealMemo remembers the last seal that verified, so that reading the
// same stored version again (every Load, every status request of the
// control API) costs an encoding and a hash, not a certificate chain and
// a signature to verify.
type sealMemo struct {
	mu  sync.Mutex
	sum [sha256.Size]byte // of the payload and the seal; zero: none yet
}

// checkSeal returns nil if s is nil, t is the empty store's zero topology
// or t's seal verifies, and otherwise an error matching ErrUnsealed that
// says why. A payload and seal that verified before are not verified
// again (memo may be nil).
func checkSeal(s Sealer, memo *sealMemo, t Topology) error {
	if s == nil || (t.Version == 0 && len(t.Operators) == 0) {
		return nil
	}
	if t.Seal == nil {
		return fmt.Errorf("%w: version %d has no signature", ErrUnsealed, t.Version)
	}
	p, err := SealPayload(t)
	if err != nil {
		return err
	}
	h := sha256.New()
	h.Write(p)
	h.Write([]byte(t.Seal.Signer))
	for _, c := range t.Seal.Chain {
		h.Write(c)
	}
	h.Write(t.Seal.Sig)
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	if memo != nil {
		memo.mu.Lock()
		seen := memo.sum == sum
		memo.mu.Unlock()
		if seen {
			return nil
		}
	}
	if err := s.Check(p, *t.Seal); err != nil {
		return fmt.Errorf("%w: version %d, signed as %q: %w", ErrUnsealed, t.Version, t.Seal.Signer, err)
	}
	if memo != nil {
		memo.mu.Lock()
		memo.sum = sum
		memo.mu.Unlock()
	}
	return nil
}

// NodeSealer is the Sealer of a node with node certificates: it signs with
// the node's key and accepts what any node certificate of the cluster CA
// signed (creds.Source.Sign, CheckSigned). It rereads the files before
// each use, so rotated certificates are used (topologies are written and
// read rarely).
type NodeSealer struct {
	Creds *creds.Source
}

var _ Sealer = NodeSealer{}

// Sign implements Sealer.
func (s NodeSealer) Sign(payload []byte) (Seal, error) {
	_ = s.Creds.Reload() // a failed reload keeps the credentials in use, and says so
	chain, sig, err := s.Creds.Sign(payload)
	if err != nil {
		return Seal{}, err
	}
	return Seal{Signer: creds.Identity(s.Creds.Leaf()), Chain: chain, Sig: sig}, nil
}

// Check implements Sealer: the seal verifies and names its certificate.
func (s NodeSealer) Check(payload []byte, seal Seal) error {
	_ = s.Creds.Reload()
	who, err := s.Creds.CheckSigned(payload, seal.Chain, seal.Sig)
	if err != nil {
		return err
	}
	if who != seal.Signer {
		return fmt.Errorf("signed by %q, which claims to be %q", who, seal.Signer)
	}
	return nil
}
