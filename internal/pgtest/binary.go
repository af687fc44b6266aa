package pgtest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// EnvBin names the environment variable holding the directory of the
// PostgreSQL server binaries (initdb, postgres); the Makefile sets it.
const EnvBin = "SLUICE_POSTGRES_BIN"

const installHint = "install Debian's postgresql package (`make tools` does: scripts/debian-packages.sh) " +
	"and/or set " + EnvBin + " to the directory holding initdb and postgres (scripts/pg-bindir.sh prints it)"

// BinDir returns the directory of initdb and postgres, failing t if there
// is none: $SLUICE_POSTGRES_BIN, else the newest /usr/lib/postgresql/*/bin.
func BinDir(t TB) string {
	t.Helper()
	d, err := findBinDir()
	if err != nil {
		t.Fatalf("pgtest: no PostgreSQL server: %v; %s", err, installHint)
	}
	return d
}

func findBinDir() (string, error) {
	if d := os.Getenv(EnvBin); d != "" {
		if err := hasServer(d); err != nil {
			return "", fmt.Errorf("%s=%s: %w", EnvBin, d, err)
		}
		return d, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return majorOf(b) - majorOf(a) })
	for _, d := range dirs {
		if hasServer(d) == nil {
			return d, nil
		}
	}
	return "", fmt.Errorf("%s is not set and no /usr/lib/postgresql/*/bin holds initdb and postgres", EnvBin)
}

// majorOf returns the major version in /usr/lib/postgresql/<major>/bin.
func majorOf(dir string) int {
	n, _ := strconv.Atoi(strings.TrimSuffix(filepath.Base(filepath.Dir(dir)), "/"))
	return n
}

func hasServer(dir string) error {
	for _, b := range []string{"initdb", "postgres", "pg_ctl"} {
		st, err := os.Stat(filepath.Join(dir, b))
		if err != nil {
			return err
		}
		if st.Mode()&0o111 == 0 {
			return fmt.Errorf("%s is not executable", filepath.Join(dir, b))
		}
	}
	return nil
}
