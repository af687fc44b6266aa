package toolbin_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/toolbin"
)

// TestFind: the variable wins over the cache, a binary Check refuses is an
// error naming where it came from, and without Build a missing binary is
// an error rather than a build.
func TestFind(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("SLUICE_CACHE", cache)
	t.Setenv("TOOLBIN_TEST_BIN", "")
	tool := toolbin.Tool{Name: "thing", File: "thing-v1", Env: "TOOLBIN_TEST_BIN"}
	if _, err := tool.Find(nil); err == nil || !strings.Contains(err.Error(), "thing-v1") {
		t.Fatalf("missing binary: %v, want an error naming the cached file", err)
	}
	cached := filepath.Join(cache, "bin", "thing-v1")
	if err := os.MkdirAll(filepath.Dir(cached), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cached, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if p, err := tool.Find(nil); err != nil || p != cached {
		t.Fatalf("cached: %q, %v; want %q", p, err, cached)
	}
	other := filepath.Join(t.TempDir(), "thing")
	t.Setenv("TOOLBIN_TEST_BIN", other)
	tool.Check = func(p string) error {
		if p == other {
			return errors.New("wrong version")
		}
		return nil
	}
	if _, err := tool.Find(nil); err == nil || !strings.Contains(err.Error(), "TOOLBIN_TEST_BIN="+other) || !strings.Contains(err.Error(), "wrong version") {
		t.Fatalf("refused binary from the variable: %v", err)
	}
	if got := toolbin.Tail("a\nb\nc\n", 2); got != "b\nc" {
		t.Fatalf("Tail = %q", got)
	}
}
