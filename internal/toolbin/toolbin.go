// Package toolbin finds the binaries of the services the tests start
// (Consul, SeaweedFS, Jaeger): each is built once from the Go module proxy
// by scripts/ensure-tool.sh into the cache,
// ${SLUICE_CACHE:-$HOME/.cache/sluice}/bin, and a variable may name it
// instead (the Makefile sets them all).
package toolbin

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// Tool describes one service binary.
type Tool struct {
	// Name is scripts/ensure-tool.sh's argument, e.g. "consul".
	Name string
	// File is the binary's name in the cache, e.g. "consul-v1.14.11".
	File string
	// Env names the variable that, when set, is the binary's path.
	Env string
	// Check accepts only a binary of the right version (nil: any).
	Check func(path string) error
	// Build lets Find run scripts/ensure-tool.sh when the cache does not
	// have the binary (under a lock, so that parallel test binaries build
	// it once); without it Find fails instead (a build too long to run
	// inside a test).
	Build bool
}

// Find returns the path of the binary: $Env; else the cache's File; else,
// with Build, what scripts/ensure-tool.sh Name builds, reporting the
// build through logf. The binary found is Checked.
func (tl Tool) Find(logf func(format string, args ...any)) (string, error) {
	if p := os.Getenv(tl.Env); p != "" {
		if err := tl.check(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w", tl.Env, p, err)
		}
		return p, nil
	}
	cacheBin, err := CacheBin()
	if err != nil {
		return "", err
	}
	p := filepath.Join(cacheBin, tl.File)
	if _, err := os.Stat(p); err == nil {
		return p, tl.check(p)
	}
	if !tl.Build {
		return "", fmt.Errorf("%s is not set and %s does not exist", tl.Env, p)
	}
	p, err = tl.ensure(logf, cacheBin)
	if err != nil {
		return "", err
	}
	return p, tl.check(p)
}

func (tl Tool) check(p string) error {
	if tl.Check == nil {
		return nil
	}
	return tl.Check(p)
}

// CacheBin returns the directory of the cached binaries.
func CacheBin() (string, error) {
	cache := os.Getenv("SLUICE_CACHE")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("find the cache: %w", err)
		}
		cache = filepath.Join(home, ".cache", "sluice")
	}
	return filepath.Join(cache, "bin"), nil
}

// ensure builds the binary with scripts/ensure-tool.sh, holding a lock
// file in the cache.
func (tl Tool) ensure(logf func(string, ...any), cacheBin string) (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(cacheBin, 0o755); err != nil {
		return "", fmt.Errorf("create the cache: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(cacheBin, "."+tl.Name+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", fmt.Errorf("open the build lock: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("take the build lock: %w", err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)

	if logf != nil {
		logf("%s not in the cache; running scripts/ensure-tool.sh %s (may take minutes)", tl.File, tl.Name)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("bash", filepath.Join(root, "scripts", "ensure-tool.sh"), tl.Name)
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("scripts/ensure-tool.sh %s: %w: %s", tl.Name, err, Tail(stderr.String(), 20))
	}
	lines := strings.Fields(strings.TrimSpace(stdout.String()))
	if len(lines) == 0 {
		return "", fmt.Errorf("scripts/ensure-tool.sh %s printed no path", tl.Name)
	}
	return lines[len(lines)-1], nil
}

// repoRoot walks up from the working directory (a package directory under
// go test) to the directory holding scripts/ensure-tool.sh.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "scripts", "ensure-tool.sh")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("scripts/ensure-tool.sh not found above the working directory")
		}
		dir = parent
	}
}

// Tail returns the last n lines of s.
func Tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Once finds a Tool once per process, so that the tests of one binary
// share the answer (and a build). Safe for concurrent use.
type Once struct {
	Tool Tool

	once sync.Once
	path string
	err  error
}

// Find returns the answer of Tool.Find, computed by the first call (whose
// logf reports the build, if any).
func (o *Once) Find(logf func(format string, args ...any)) (string, error) {
	o.once.Do(func() { o.path, o.err = o.Tool.Find(logf) })
	return o.path, o.err
}
