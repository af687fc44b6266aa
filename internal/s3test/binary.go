package s3test

import (
	"bytes"
	"debug/buildinfo"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// Module and Version identify the SeaweedFS source the tests are written
// for (tools/seaweedfs/go.mod pins it; scripts/ensure-tool.sh builds it).
const (
	Module  = "github.com/seaweedfs/seaweedfs"
	Version = "v0.0.0-20261109003541-7506e5f91cd6"
)

// EnvBinary names the environment variable holding the path of the weed
// binary (the Makefile sets it).
const EnvBinary = "SLUICE_WEED_BIN"

const buildHint = "build it with `scripts/ensure-tool.sh weed` (SeaweedFS " + Version +
	" into $HOME/.cache/sluice/bin, about 20 minutes the first time; `make test` does this) and/or set " +
	EnvBinary + " to its path"

var (
	binaryOnce sync.Once
	binaryPath string
	binaryErr  error
)

// Binary returns the path of the weed binary, failing t if there is none
// or if it was not built from SeaweedFS Version (weed mini's flags and
// defaults change between commits; these tests set them all). The lookup,
// in order: $SLUICE_WEED_BIN; the cache,
// ${SLUICE_CACHE:-$HOME/.cache/sluice}/bin/weed-<Version>; running
// scripts/ensure-tool.sh weed from the repository root, which builds into
// the cache (serialised across test processes by a lock file). The result
// is computed once per test binary.
func Binary(t TB) string {
	t.Helper()
	binaryOnce.Do(func() { binaryPath, binaryErr = findBinary(t) })
	if binaryErr != nil {
		t.Fatalf("s3test: no usable weed binary: %v; %s", binaryErr, buildHint)
	}
	return binaryPath
}

func findBinary(t TB) (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		if err := checkBinary(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w", EnvBinary, p, err)
		}
		return p, nil
	}
	cache := os.Getenv("SLUICE_CACHE")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("find the cache: %w", err)
		}
		cache = filepath.Join(home, ".cache", "sluice")
	}
	p := filepath.Join(cache, "bin", "weed-"+Version)
	if _, err := os.Stat(p); err == nil {
		return p, checkBinary(p)
	}
	p, err := runEnsureTool(t, filepath.Join(cache, "bin"))
	if err != nil {
		return "", err
	}
	return p, checkBinary(p)
}

// runEnsureTool builds the binary with scripts/ensure-tool.sh. A lock file
// in the cache keeps parallel test binaries from building it twice.
func runEnsureTool(t TB, cacheBin string) (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(cacheBin, 0o755); err != nil {
		return "", fmt.Errorf("create the cache: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(cacheBin, ".s3test.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", fmt.Errorf("open the build lock: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("take the build lock: %w", err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)

	t.Logf("s3test: weed %s not in the cache; running scripts/ensure-tool.sh weed (may take 20 minutes)", Version)
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("bash", filepath.Join(root, "scripts", "ensure-tool.sh"), "weed")
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("scripts/ensure-tool.sh weed: %w: %s", err, tail(stderr.String(), 20))
	}
	lines := strings.Fields(strings.TrimSpace(stdout.String()))
	if len(lines) == 0 {
		return "", errors.New("scripts/ensure-tool.sh weed printed no path")
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

// checkBinary reads the Go build information of p (no need to run it) and
// accepts a weed built from SeaweedFS Version only.
func checkBinary(p string) error {
	info, err := buildinfo.ReadFile(p)
	if err != nil {
		return fmt.Errorf("read Go build info of %s: %w", p, err)
	}
	if info.Path != Module+"/weed" {
		return fmt.Errorf("%s is %s, want %s/weed", p, info.Path, Module)
	}
	got := info.Main.Version
	if info.Main.Path != Module {
		got = ""
		for _, d := range info.Deps {
			if d.Path == Module {
				got = d.Version
			}
		}
	}
	if got != Version {
		return fmt.Errorf("%s was built from SeaweedFS %q, want %s", p, got, Version)
	}
	return nil
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
