package natstest

import (
	"fmt"
	"os/exec"
	"strings"

	"github.com/sluicehq/sluice/internal/toolbin"
)

// Version is the nats-server release the tests are written for
// (tools/nats-server pins it; scripts/ensure-tool.sh builds it).
const Version = "v2.15.3"

// EnvBinary names the environment variable holding the path of the
// nats-server binary (the Makefile sets it).
const EnvBinary = "SLUICE_NATS_BIN"

const buildHint = "build it with `scripts/ensure-tool.sh nats-server` (nats-server " + Version +
	" into $HOME/.cache/sluice/bin, about 2 minutes the first time; `make test` does this) and/or set " +
	EnvBinary + " to its path"

var binary = toolbin.Once{Tool: toolbin.Tool{Name: "nats-server", File: "nats-server-" + Version, Env: EnvBinary, Check: checkBinary, Build: true}}

// Binary returns the path of the nats-server binary, failing t if there is
// none or if it is not nats-server Version. The lookup, in order:
// $SLUICE_NATS_BIN; the cache,
// ${SLUICE_CACHE:-$HOME/.cache/sluice}/bin/nats-server-<Version>; running
// scripts/ensure-tool.sh nats-server from the repository root, which builds
// into the cache (serialised across test processes by a lock file). The
// result is computed once per test binary.
func Binary(t TB) string {
	t.Helper()
	p, err := binary.Find(func(format string, args ...any) { t.Logf("natstest: "+format, args...) })
	if err != nil {
		t.Fatalf("natstest: no usable nats-server binary: %v; %s", err, buildHint)
	}
	return p
}

// checkBinary runs "nats-server --version" and accepts Version only.
func checkBinary(p string) error {
	out, err := exec.Command(p, "--version").CombinedOutput()
	if err != nil {
		return fmt.Errorf("run %s --version: %w: %s", p, err, toolbin.Tail(string(out), 5))
	}
	got := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(out)), "nats-server:"))
	if got != Version {
		return fmt.Errorf("%s is nats-server %q, want %s", p, got, Version)
	}
	return nil
}
