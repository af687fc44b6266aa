package s3test

import (
	"debug/buildinfo"
	"fmt"

	"github.com/sluicehq/sluice/internal/toolbin"
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

var binary = toolbin.Once{Tool: toolbin.Tool{Name: "weed", File: "weed-" + Version, Env: EnvBinary, Check: checkBinary, Build: true}}

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
	p, err := binary.Find(func(format string, args ...any) { t.Logf("s3test: "+format, args...) })
	if err != nil {
		t.Fatalf("s3test: no usable weed binary: %v; %s", err, buildHint)
	}
	return p
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
