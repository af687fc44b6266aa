package consultest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Version is the Consul release the tests are written for.
const Version = "v1.14.11"

// EnvBinary names the environment variable holding the path of the Consul
// binary (the Makefile sets it).
const EnvBinary = "SLUICE_CONSUL_BIN"

const buildHint = "build it with `scripts/ensure-tool.sh consul` (Consul " + Version +
	" into $HOME/.cache/sluice/bin, about 9 minutes the first time) and/or set " + EnvBinary + " to its path"

var (
	binaryOnce sync.Once
	binaryPath string
	binaryErr  error
)

// Binary returns the path of the Consul binary, failing t if there is none
// or if it is not a Consul 1.14 (1.15 changed the dev agent and the
// health-check behaviour these tests rely on). The lookup, in order:
// $SLUICE_CONSUL_BIN; the cache, ${SLUICE_CACHE:-$HOME/.cache/sluice}/bin/consul-v1.14.11;
// running scripts/ensure-tool.sh consul from the repository root, which
// builds into the cache (serialised across test processes by a lock file).
// The result is computed once per test binary.
func Binary(t TB) string {
	t.Helper()
	binaryOnce.Do(func() { binaryPath, binaryErr = findBinary(t) })
	if binaryErr != nil {
		t.Fatalf("consultest: no usable Consul binary: %v; %s", binaryErr, buildHint)
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
	p := filepath.Join(cache, "bin", "consul-"+Version)
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
	lock, err := os.OpenFile(filepath.Join(cacheBin, ".consultest.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", fmt.Errorf("open the build lock: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("take the build lock: %w", err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)

	t.Logf("consultest: Consul %s not in the cache; running scripts/ensure-tool.sh consul (may take minutes)", Version)
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("bash", filepath.Join(root, "scripts", "ensure-tool.sh"), "consul")
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("scripts/ensure-tool.sh consul: %w: %s", err, tail(stderr.String(), 20))
	}
	lines := strings.Fields(strings.TrimSpace(stdout.String()))
	if len(lines) == 0 {
		return "", errors.New("scripts/ensure-tool.sh consul printed no path")
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

var versionRE = regexp.MustCompile(`Consul v(\d+)\.(\d+)\.(\d+)`)

// checkBinary runs "consul version" and accepts 1.14.x only.
func checkBinary(p string) error {
	out, err := exec.Command(p, "version").CombinedOutput()
	if err != nil {
		return fmt.Errorf("run %s version: %w: %s", p, err, tail(string(out), 5))
	}
	m := versionRE.FindStringSubmatch(string(out))
	if m == nil {
		return fmt.Errorf("%s version: no \"Consul vX.Y.Z\" in %q", p, tail(string(out), 3))
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	if major != 1 || minor != 14 {
		return fmt.Errorf("%s is Consul %s, want 1.14.x (%s)", p, strings.TrimPrefix(m[0], "Consul "), Version)
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
