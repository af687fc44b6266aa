package node

import "runtime/debug"

// BuildVersion returns the version a node announces when Config.Version
// is empty: the main module's version for a release build ("v1.4.0"),
// else "devel+" and the first 12 digits of the commit it was built from,
// with "-dirty" when the tree had changes ("devel+0123456789ab-dirty"),
// else "devel".
func BuildVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	return versionOf(info)
}

// versionOf is BuildVersion for the build information info.
func versionOf(info *debug.BuildInfo) string {
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if rev == "" {
		return "devel"
	}
	return "devel+" + rev[:min(len(rev), 12)] + dirty
}
