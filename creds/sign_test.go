package creds_test

import (
	"errors"
	"testing"

	"github.com/sluicehq/sluice/creds"
	"github.com/sluicehq/sluice/creds/credstest"
)

// TestSignedByANodeOfTheCluster: what one node signs, another node of the
// same CA accepts, naming the signer; a changed payload, another CA's
// node, a client-only certificate of the CA and credentials without a key
// are refused.
func TestSignedByANodeOfTheCluster(t *testing.T) {
	ca := credstest.NewCA(t, "cluster CA")
	n1, n2 := load(t, ca.Node(t, "n1").Config()), load(t, ca.Node(t, "n2").Config())
	payload := []byte(`{"Version":7}`)
	chain, sig, err := n1.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	who, err := n2.CheckSigned(payload, chain, sig)
	if err != nil || who != "n1" {
		t.Fatalf("CheckSigned = %q, %v; want n1", who, err)
	}
	if _, err := n2.CheckSigned([]byte(`{"Version":8}`), chain, sig); err == nil {
		t.Fatal("a changed payload passed")
	}
	if _, err := n2.CheckSigned(payload, nil, sig); err == nil {
		t.Fatal("a signature without a certificate passed")
	}

	other := load(t, credstest.NewCA(t, "other CA").Node(t, "n1").Config())
	chain, sig, err = other.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n2.CheckSigned(payload, chain, sig); !errors.Is(err, creds.ErrUnknownAuthority) {
		t.Fatalf("another CA's node: %v, want ErrUnknownAuthority", err)
	}

	alice := load(t, ca.Client(t, "alice").Config())
	chain, sig, err = alice.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n2.CheckSigned(payload, chain, sig); !errors.Is(err, creds.ErrUsage) {
		t.Fatalf("a client-only certificate: %v, want ErrUsage", err)
	}

	caOnly := load(t, credstest.Files{CA: ca.CertFile}.Config())
	if _, _, err := caOnly.Sign(payload); !errors.Is(err, creds.ErrNoKey) {
		t.Fatalf("Sign without a key: %v, want ErrNoKey", err)
	}
}
