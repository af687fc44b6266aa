package creds_test

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/creds"
	"github.com/sluicehq/sluice/creds/credstest"
	"github.com/sluicehq/sluice/internal/sluicetest"
)

const (
	adminToken = "0123456789abcdef0123456789abcdef"
	readToken  = "fedcba9876543210fedcba9876543210"
)

var roles = []string{"read", "admin"}

func loadTokens(t *testing.T, cfg creds.TokensConfig) *creds.Tokens {
	t.Helper()
	cfg.Labels, cfg.Logger = roles, sluicetest.Logger(t)
	tk, err := creds.LoadTokens(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tk.Close() })
	return tk
}

func TestTokensLookup(t *testing.T) {
	file := credstest.TokenFile(t, "# control API tokens", "", "admin:"+adminToken, "  read : "+readToken+"  ")
	tk := loadTokens(t, creds.TokensConfig{File: file, Inline: "read:inline-token-0123456789, admin:inline-admin-0123456789"})
	for _, tc := range []struct {
		token, label string
		ok           bool
	}{
		{adminToken, "admin", true},
		{readToken, "read", true},
		{"inline-token-0123456789", "read", true},
		{"inline-admin-0123456789", "admin", true},
		{adminToken[:20], "", false},
		{adminToken + "0", "", false},
		{"", "", false},
		{"admin:" + adminToken, "", false},
	} {
		if label, ok := tk.Lookup(tc.token); label != tc.label || ok != tc.ok {
			t.Errorf("Lookup(%q) = %q, %v; want %q, %v", tc.token, label, ok, tc.label, tc.ok)
		}
	}
	if tok, ok := tk.First("read"); !ok || tok != readToken {
		t.Errorf("First(read) = %q, %v", tok, ok)
	}
	if tk.Len() != 4 {
		t.Errorf("Len = %d, want 4", tk.Len())
	}
}

func TestTokensFileErrorsNameTheLine(t *testing.T) {
	file := credstest.TokenFile(t, "admin:"+adminToken, "root:"+readToken, "read "+readToken, "read:short", "read:has space in it 0123456789", "read:"+adminToken)
	_, err := creds.LoadTokens(creds.TokensConfig{File: file, Labels: roles})
	if !errors.Is(err, creds.ErrBadFile) {
		t.Fatalf("got %v, want ErrBadFile", err)
	}
	for _, want := range []string{
		file + ` line 2: unknown label "root": want one of read, admin`,
		file + " line 3: want label:token",
		file + " line 4: the token is 5 characters; want 16 to 512",
		file + ` line 5: the token holds ' '`,
		"is also at " + file + " line 1",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if _, err := creds.LoadTokens(creds.TokensConfig{File: file + ".missing", Labels: roles}); !errors.Is(err, creds.ErrBadFile) || !strings.Contains(err.Error(), file+".missing") {
		t.Fatalf("missing file: %v", err)
	}
}

// TestTokensReloadOnChange revokes a token by rewriting the file, without
// a restart; a file made invalid keeps the tokens in use.
func TestTokensReloadOnChange(t *testing.T) {
	file := credstest.TokenFile(t, "admin:"+adminToken, "read:"+readToken)
	tk := loadTokens(t, creds.TokensConfig{File: file})
	if err := tk.Watch(); err != nil {
		t.Fatal(err)
	}
	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(file+".tmp", []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(file+".tmp", file); err != nil {
			t.Fatal(err)
		}
	}
	write("read:" + readToken + "\n")
	sluicetest.WaitFor(t, 10*time.Second, "the admin token to be revoked", func() bool {
		_, ok := tk.Lookup(adminToken)
		return !ok
	})
	write("read:oops\n")
	if err := tk.Reload(); err == nil {
		t.Fatal("reloading an invalid file succeeded")
	}
	if label, ok := tk.Lookup(readToken); !ok || label != "read" {
		t.Fatalf("after an invalid file the read token is %q, %v; want kept", label, ok)
	}
}
