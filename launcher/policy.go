package launcher

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/control/api"
)

// Policy says which executables a launcher may start, and which
// environment variables a manifest may give them. A launcher runs what a
// manifest names as the node's user, so by default it runs nothing:
// executables must be listed (Executables) or placed in a directory of
// slugs (SlugDir), and variables that change how a program, its
// interpreter or the dynamic loader behave (LD_PRELOAD, PERL5OPT,
// PYTHONPATH, NODE_OPTIONS, BASH_ENV, … see DeniedEnv) are refused unless
// listed in AllowEnv.
type Policy struct {
	// Executables lists the executables allowed, by absolute path, each
	// optionally pinned to the SHA-256 digest of its contents.
	Executables []Executable
	// SlugDir allows every regular file directly in this directory (a
	// symbolic link must point inside it too); an entry of Executables
	// pins one to a digest.
	SlugDir string
	// AllowEnv lists variable names a manifest may set although DeniedEnv
	// refuses them.
	AllowEnv []string
}

// Executable is one allowed executable.
type Executable struct {
	// Path is absolute and clean.
	Path string
	// SHA256 is the hex digest its contents must have; empty: any.
	SHA256 string
}

// String writes e as ParseExecutables reads it.
func (e Executable) String() string {
	if e.SHA256 == "" {
		return e.Path
	}
	return e.Path + "@sha256:" + e.SHA256
}

// Enabled reports whether p allows any executable.
func (p Policy) Enabled() bool { return len(p.Executables) > 0 || p.SlugDir != "" }

// Validate checks p: every problem names the field and the fix.
func (p Policy) Validate() error {
	var errs []error
	if !p.Enabled() {
		errs = append(errs, errors.New("launcher: no executable is allowed: list them (Policy.Executables, -launch-allow) or give a directory of slugs (Policy.SlugDir, -launch-dir)"))
	}
	for i, e := range p.Executables {
		if !filepath.IsAbs(e.Path) || filepath.Clean(e.Path) != e.Path {
			errs = append(errs, fmt.Errorf("launcher: Policy.Executables[%d]: %q: want an absolute, clean path", i, e.Path))
		}
		if e.SHA256 != "" {
			if b, err := hex.DecodeString(e.SHA256); err != nil || len(b) != sha256.Size || strings.ToLower(e.SHA256) != e.SHA256 {
				errs = append(errs, fmt.Errorf("launcher: Policy.Executables[%d]: SHA256 %q: want 64 lowercase hex digits, as sha256sum prints", i, e.SHA256))
			}
		}
	}
	if p.SlugDir != "" && (!filepath.IsAbs(p.SlugDir) || filepath.Clean(p.SlugDir) != p.SlugDir) {
		errs = append(errs, fmt.Errorf("launcher: Policy.SlugDir %q: want an absolute, clean path", p.SlugDir))
	}
	for _, k := range p.AllowEnv {
		if !validEnvName(k) {
			errs = append(errs, fmt.Errorf("launcher: Policy.AllowEnv: %q is not a variable name (letters, digits, _)", k))
		}
	}
	return errors.Join(errs...)
}

// ParseExecutables parses a comma-separated list of absolute paths, each
// optionally followed by @sha256:HEX, as in -launch-allow.
func ParseExecutables(s string) ([]Executable, error) {
	var out []Executable
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		path, digest, pinned := strings.Cut(part, "@")
		e := Executable{Path: path}
		if pinned {
			hexDigest, ok := strings.CutPrefix(digest, "sha256:")
			if !ok {
				return nil, fmt.Errorf("launcher: executable %q: want PATH or PATH@sha256:HEX", part)
			}
			e.SHA256 = strings.ToLower(hexDigest)
		}
		out = append(out, e)
	}
	p := Policy{Executables: out}
	if err := p.Validate(); err != nil && len(out) > 0 {
		return nil, err
	}
	return out, nil
}

// Resolve checks that p allows the executable exe (an absolute path or a
// file:// URI, as a manifest gives it) and returns the path to run. It
// refuses, with ErrNotAllowed, an executable p does not allow, one that is
// not a regular executable file, or one that users other than its owner
// may write (they could replace it); with ErrDigestMismatch one whose
// contents differ from its pinned digest.
func (p Policy) Resolve(exe string) (string, error) {
	path := strings.TrimPrefix(exe, "file://")
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("%w: executable %q: the local launcher runs a local absolute path (or file:// URI) only", ErrNotAllowed, exe)
	}
	if filepath.Clean(path) != path {
		return "", fmt.Errorf("%w: executable %q is not a clean path: write it without . and .. elements", ErrNotAllowed, exe)
	}
	var pin *Executable
	for i := range p.Executables {
		if p.Executables[i].Path == path {
			pin = &p.Executables[i]
			break
		}
	}
	inDir := p.SlugDir != "" && filepath.Dir(path) == p.SlugDir
	if pin == nil && !inDir {
		return "", fmt.Errorf("%w: executable %s is not on this launcher's allow-list (%s): add it with -launch-allow or put it in the slug directory (-launch-dir)",
			ErrNotAllowed, path, p.describe())
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", fmt.Errorf("%w: executable %s: %w", ErrNotAllowed, path, err)
	}
	if inDir && pin == nil {
		dir, err := filepath.EvalSymlinks(p.SlugDir)
		if err != nil {
			return "", fmt.Errorf("%w: slug directory %s: %w", ErrNotAllowed, p.SlugDir, err)
		}
		if filepath.Dir(real) != dir {
			return "", fmt.Errorf("%w: executable %s leads to %s, outside the slug directory %s", ErrNotAllowed, path, real, p.SlugDir)
		}
	}
	fi, err := os.Stat(real)
	switch {
	case err != nil:
		return "", fmt.Errorf("%w: executable %s: %w", ErrNotAllowed, path, err)
	case !fi.Mode().IsRegular():
		return "", fmt.Errorf("%w: executable %s is not a regular file", ErrNotAllowed, path)
	case fi.Mode().Perm()&0o111 == 0:
		return "", fmt.Errorf("%w: executable %s is not executable (mode %v)", ErrNotAllowed, path, fi.Mode().Perm())
	case fi.Mode().Perm()&0o022 != 0:
		return "", fmt.Errorf("%w: executable %s can be written by other users (mode %v), who could replace it: chmod go-w it", ErrNotAllowed, path, fi.Mode().Perm())
	}
	if di, err := os.Stat(filepath.Dir(real)); err == nil && di.Mode().Perm()&0o002 != 0 && di.Mode()&os.ModeSticky == 0 {
		return "", fmt.Errorf("%w: executable %s is in %s, which anyone can write to (mode %v): move it", ErrNotAllowed, path, filepath.Dir(real), di.Mode().Perm())
	}
	if pin != nil && pin.SHA256 != "" {
		got, err := fileSHA256(real)
		if err != nil {
			return "", fmt.Errorf("%w: executable %s: %w", ErrNotAllowed, path, err)
		}
		if got != pin.SHA256 {
			return "", fmt.Errorf("%w: executable %s has SHA-256 %s, the allow-list pins %s: it changed; if the change is yours, pin the new digest (sha256sum %s)",
				ErrDigestMismatch, path, got, pin.SHA256, path)
		}
	}
	return real, nil
}

// describe lists what p allows, for errors.
func (p Policy) describe() string {
	var parts []string
	for _, e := range p.Executables {
		parts = append(parts, e.Path)
	}
	if p.SlugDir != "" {
		parts = append(parts, p.SlugDir+"/*")
	}
	if len(parts) == 0 {
		return "empty"
	}
	return strings.Join(parts, ", ")
}

// fileSHA256 returns the hex SHA-256 of a file's contents.
func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// CheckEnv returns the problems of a manifest's environment under p, each
// "environment.NAME: problem", sorted by name.
func (p Policy) CheckEnv(env map[string]string) []string {
	var problems []string
	for _, k := range slices.Sorted(maps.Keys(env)) {
		if !validEnvName(k) {
			problems = append(problems, fmt.Sprintf("environment.%s: not a variable name: want letters, digits and _, not starting with a digit", k))
			continue
		}
		if why, denied := DeniedEnv(k); denied && !slices.Contains(p.AllowEnv, k) {
			problems = append(problems, fmt.Sprintf("environment.%s: refused: %s; a manifest may not set it, so that deploying cannot run code of its choice in launched processes "+
				"(a launcher node that needs it allows it with -launch-allow-env %s)", k, why, k))
		}
	}
	return problems
}

// CheckManifest returns the problems of a manifest under p, for the control
// API to refuse a deploy early (see control.Config.CheckManifest): its
// environment. Whether its executable is allowed depends on the launcher
// node that starts it, which says so in the status.
func (p Policy) CheckManifest(m api.Manifest) []string { return p.CheckEnv(m.Environment) }

// validEnvName reports whether s is a portable variable name.
func validEnvName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for _, c := range []byte(s) {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// Environment variables read by PolicyFromEnv.
const (
	EnvAllow    = "SLUICE_LAUNCH_ALLOW"
	EnvDir      = "SLUICE_LAUNCH_DIR"
	EnvAllowEnv = "SLUICE_LAUNCH_ALLOW_ENV"
)

// PolicyFromEnv reads a policy from $SLUICE_LAUNCH_ALLOW (as
// ParseExecutables), $SLUICE_LAUNCH_DIR and $SLUICE_LAUNCH_ALLOW_ENV
// (comma-separated names); getenv nil means none is set.
func PolicyFromEnv(getenv func(string) string) (Policy, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	exes, err := ParseExecutables(getenv(EnvAllow))
	if err != nil {
		return Policy{}, fmt.Errorf("$%s: %w", EnvAllow, err)
	}
	return Policy{Executables: exes, SlugDir: getenv(EnvDir), AllowEnv: splitList(getenv(EnvAllowEnv))}, nil
}

// splitList splits a comma-separated list, dropping empty entries.
func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// RegisterFlags defines -launch-allow, -launch-dir and -launch-allow-env on
// fs, setting p, with the SLUICE_LAUNCH_* variables (getenv nil: none) as
// defaults.
func (p *Policy) RegisterFlags(fs *flag.FlagSet, getenv func(string) string) error {
	env, err := PolicyFromEnv(getenv)
	if err != nil {
		return err
	}
	*p = env
	fs.Func("launch-allow", "executables -launch may start: comma-separated absolute paths, each optionally PATH@sha256:HEX ($"+EnvAllow+")",
		func(v string) error {
			exes, err := ParseExecutables(v)
			p.Executables = exes
			return err
		})
	fs.StringVar(&p.SlugDir, "launch-dir", env.SlugDir, "directory whose executables -launch may start ($"+EnvDir+")")
	fs.Func("launch-allow-env", "comma-separated environment variables manifests may set although they change how programs load code (e.g. PATH) ($"+EnvAllowEnv+")",
		func(v string) error {
			p.AllowEnv = splitList(v)
			return nil
		})
	return nil
}
