// Package wasmtest builds wasm guest modules for tests and benchmarks:
// the local Go toolchain compiles a package with GOOS=wasip1 GOARCH=wasm
// -buildmode=c-shared. A package is built once per process (Go's build
// cache makes later processes quick too); each caller gets its own copy
// of the file.
package wasmtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// built holds the bytes of every package built by this process.
var (
	mu    sync.Mutex
	built = map[string][]byte{}
)

// Build compiles the Go package pkg (an import path) to a wasm reactor
// module and returns its path under dir.
func Build(ctx context.Context, pkg, dir string) (string, error) {
	mu.Lock()
	defer mu.Unlock()
	out := filepath.Join(dir, filepath.Base(pkg)+".wasm")
	if b, ok := built[pkg]; ok {
		return out, os.WriteFile(out, b, 0o644)
	}
	gobin := filepath.Join(runtimeGOROOT(), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		gobin = "go"
	}
	cmd := exec.CommandContext(ctx, gobin, "build", "-buildmode=c-shared", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("wasmtest: build %s: %w: %s", pkg, err, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return "", fmt.Errorf("wasmtest: read %s: %w", out, err)
	}
	built[pkg] = b
	return out, nil
}

// MustBuild is Build into tb.TempDir(), failing the test on error.
func MustBuild(tb testing.TB, pkg string) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	path, err := Build(ctx, pkg, tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	return path
}
