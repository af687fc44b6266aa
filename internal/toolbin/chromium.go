package toolbin

import (
	"fmt"
	"os"
	"os/exec"
)

// ChromiumEnv names the variable that, when set, is the path of the
// Chromium (or Chrome) binary the console's browser tests drive.
const ChromiumEnv = "SLUICE_CHROMIUM_BIN"

// Chromium returns the path of a Chromium binary: $SLUICE_CHROMIUM_BIN,
// else chromium, chromium-browser or google-chrome on $PATH. Unlike the
// services, it is not built: `make tools` installs Debian's package.
func Chromium() (string, error) {
	if p := os.Getenv(ChromiumEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w", ChromiumEnv, p, err)
		}
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no Chromium: %s is not set and neither chromium, chromium-browser nor google-chrome is on $PATH; "+
		"install Debian's package (`make tools` does: apt-get install --no-install-recommends chromium) or set %s", ChromiumEnv, ChromiumEnv)
}
