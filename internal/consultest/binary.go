package consultest

import (
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/internal/toolbin"
)

// Version is the Consul release the tests are written for.
const Version = "v1.14.11"

// EnvBinary names the environment variable holding the path of the Consul
// binary (the Makefile sets it).
const EnvBinary = "SLUICE_CONSUL_BIN"

const buildHint = "build it with `scripts/ensure-tool.sh consul` (Consul " + Version +
	" into $HOME/.cache/sluice/bin, about 9 minutes the first time) and/or set " + EnvBinary + " to its path"

var binary = toolbin.Once{Tool: toolbin.Tool{Name: "consul", File: "consul-" + Version, Env: EnvBinary, Check: checkBinary, Build: true}}

// Binary returns the path of the Consul binary, failing t if there is none
// or if it is not a Consul 1.14 (1.15 changed the dev agent and the
// health-check behaviour these tests rely on). The lookup, in order:
// $SLUICE_CONSUL_BIN; the cache, ${SLUICE_CACHE:-$HOME/.cache/sluice}/bin/consul-v1.14.11;
// running scripts/ensure-tool.sh consul from the repository root, which
// builds into the cache (serialised across test processes by a lock file).
// The result is computed once per test binary.
func Binary(t TB) string {
	t.Helper()
	p, err := binary.Find(func(format string, args ...any) { t.Logf("consultest: "+format, args...) })
	if err != nil {
		t.Fatalf("consultest: no usable Consul binary: %v; %s", err, buildHint)
	}
	return p
}

var versionRE = regexp.MustCompile(`Consul v(\d+)\.(\d+)\.(\d+)`)

// checkBinary runs "consul version" and accepts 1.14.x only.
func checkBinary(p string) error {
	out, err := exec.Command(p, "version").CombinedOutput()
	if err != nil {
		return fmt.Errorf("run %s version: %w: %s", p, err, toolbin.Tail(string(out), 5))
	}
	m := versionRE.FindStringSubmatch(string(out))
	if m == nil {
		return fmt.Errorf("%s version: no \"Consul vX.Y.Z\" in %q", p, toolbin.Tail(string(out), 3))
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	if major != 1 || minor != 14 {
		return fmt.Errorf("%s is Consul %s, want 1.14.x (%s)", p, strings.TrimPrefix(m[0], "Consul "), Version)
	}
	return nil
}
