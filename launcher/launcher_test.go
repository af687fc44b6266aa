package launcher_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/cluster"
	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/launcher"
	"github.com/sluicehq/sluice/topology"
)

// memStore is a topology store in memory that takes whatever it is given,
// as a store written by a careless or hostile node would hold it.
type memStore struct {
	mu       sync.Mutex
	t        topology.Topology
	watchers []chan topology.Topology
}

func (s *memStore) Load(context.Context) (topology.Topology, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.t.Clone(), nil
}

func (s *memStore) Swap(_ context.Context, next topology.Topology) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.t = next
	for _, w := range s.watchers {
		select {
		case w <- next:
		default:
		}
	}
	return nil
}

func (s *memStore) Watch(ctx context.Context) <-chan topology.Topology {
	ch := make(chan topology.Topology, 1)
	s.mu.Lock()
	s.watchers = append(s.watchers, ch)
	s.mu.Unlock()
	return ch
}

// put deploys specs as they are, without the topology's own checks.
func (s *memStore) put(specs ...topology.OperatorSpec) {
	s.mu.Lock()
	v := s.t.Version + 1
	s.mu.Unlock()
	for i := range specs {
		specs[i].Meta = specs[i].Meta.WithDefaults()
		specs[i].DeployedAt = time.Now()
	}
	_ = s.Swap(context.Background(), topology.Topology{Version: v, Operators: specs})
}

// env is one launcher under test, its data directory inside a node
// directory, and a directory of slugs.
type env struct {
	t       *testing.T
	node    string // the node's data dir; the launcher's is node/launched
	slugs   string
	store   *memStore
	l       *launcher.Local
	stop    context.CancelFunc
	stopped chan struct{}
}

func newEnv(t *testing.T, policy func(slugs string) launcher.Policy) *env {
	t.Helper()
	e := &env{t: t, node: t.TempDir(), slugs: t.TempDir(), store: &memStore{}, stopped: make(chan struct{})}
	l, err := launcher.New(launcher.Config{
		Node: "n1", DataDir: filepath.Join(e.node, "launched"), Store: e.store, Interval: 10 * time.Millisecond,
		Members: func(context.Context) ([]cluster.Member, error) {
			return []cluster.Member{{ID: "n1", Kinds: []string{launcher.Kind}}}, nil
		},
		Logger: sluicetest.Logger(t), Policy: policy(e.slugs), Env: []string{"SLUICE_CONTROL_TOKENS_FILE=/etc/sluice/tokens"},
	})
	if err != nil {
		t.Fatal(err)
	}
	e.l = l
	ctx, cancel := context.WithCancel(context.Background())
	e.stop = cancel
	go func() {
		defer close(e.stopped)
		_ = l.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-e.stopped
	})
	return e
}

// slug writes an executable script into the slug directory: it records
// its environment in $SLUICE_DATA_DIR/started, and a marker there, then
// waits to be stopped.
func (e *env) slug(name string) string {
	e.t.Helper()
	p := filepath.Join(e.slugs, name)
	script := "#!/bin/sh\nenv > \"$SLUICE_DATA_DIR/started\"\nexec sleep 3600\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		e.t.Fatal(err)
	}
	return p
}

// waitState waits until op's process is in state and returns its view.
func (e *env) waitState(op, state string) api.LaunchedView {
	e.t.Helper()
	var got api.LaunchedView
	sluicetest.WaitFor(e.t, 30*time.Second, fmt.Sprintf("%s to be %s", op, state), func() bool {
		for _, v := range e.l.Launched() {
			if v.Operator == op {
				got = v
				return v.State == state
			}
		}
		return false
	})
	return got
}

func spec(name, exe string, environment map[string]string) topology.OperatorSpec {
	return topology.OperatorSpec{Kind: "k-" + name, Meta: core.Metadata{Name: name}, Executable: exe, Env: environment}
}

// TestPERL5OPTExploitRefused: the attack of issue 10 (perl with
// PERL5OPT running a command) is refused even with perl allowed, and
// nothing runs.
func TestPERL5OPTExploitRefused(t *testing.T) {
	perl := "/usr/bin/perl"
	if _, err := os.Stat(perl); err != nil {
		perl = "/bin/sh" // the environment check comes first either way
	}
	e := newEnv(t, func(string) launcher.Policy { return launcher.Policy{Executables: []launcher.Executable{{Path: perl}}} })
	pwned := filepath.Join(t.TempDir(), "pwned")
	e.store.put(spec("evil", perl, map[string]string{"PERL5OPT": fmt.Sprintf("-Mbase;system(q(id>%s))", pwned)}),
		spec("evil2", perl, map[string]string{"LD_PRELOAD": "/tmp/x.so", "BASH_ENV": "/tmp/x"}))
	v := e.waitState("evil", "refused")
	if !strings.Contains(v.Message, "environment.PERL5OPT: refused") {
		t.Errorf("status message %q does not say PERL5OPT was refused", v.Message)
	}
	v = e.waitState("evil2", "refused")
	for _, want := range []string{"environment.BASH_ENV: refused", "environment.LD_PRELOAD: refused"} {
		if !strings.Contains(v.Message, want) {
			t.Errorf("status message %q lacks %q", v.Message, want)
		}
	}
	if v.ID != "" {
		t.Errorf("a refused operator has a process: %s", v.ID)
	}
	if _, err := os.Stat(pwned); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the exploit ran: %s exists (%v)", pwned, err)
	}
}

// TestOperatorDirectoryNeverEscapes: an operator named "..", ".", or with
// a path in its name, never gets a directory outside the launcher's.
func TestOperatorDirectoryNeverEscapes(t *testing.T) {
	e := newEnv(t, func(slugs string) launcher.Policy { return launcher.Policy{SlugDir: slugs} })
	exe := e.slug("node")
	names := []string{"..", ".", "../x", "a/../..", "a/b"}
	var specs []topology.OperatorSpec
	for _, n := range names {
		specs = append(specs, spec(n, exe, nil))
	}
	e.store.put(specs...)
	for _, n := range names {
		if v := e.waitState(n, "refused"); !strings.Contains(v.Message, "not safe as a path") {
			t.Errorf("operator %q: message %q", n, v.Message)
		}
	}
	// Nothing was created next to the launcher's directory, nor in it.
	entries, _ := os.ReadDir(e.node)
	for _, en := range entries {
		if en.Name() != "launched" {
			t.Errorf("%s was created in the node's directory", en.Name())
		}
	}
	if inside, _ := os.ReadDir(filepath.Join(e.node, "launched")); len(inside) != 0 {
		t.Errorf("the launcher's directory holds %v", inside)
	}
}

// TestExecutableNotOnTheAllowListRefused names the executable and how to
// allow it in the status.
func TestExecutableNotOnTheAllowListRefused(t *testing.T) {
	e := newEnv(t, func(slugs string) launcher.Policy { return launcher.Policy{SlugDir: slugs} })
	outside := filepath.Join(t.TempDir(), "node")
	if err := os.WriteFile(outside, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(e.slugs, "link")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	writable := e.slug("writable")
	if err := os.Chmod(writable, 0o777); err != nil {
		t.Fatal(err)
	}
	e.store.put(spec("sh", "/bin/sh", nil), spec("outside", outside, nil), spec("link", link, nil), spec("writable", writable, nil),
		spec("dotdot", e.slugs+"/../"+filepath.Base(outside), nil), spec("remote", "https://example.com/node", nil))
	for op, want := range map[string]string{
		"sh":       "executable /bin/sh is not on this launcher's allow-list (" + e.slugs + "/*): add it with -launch-allow",
		"outside":  "is not on this launcher's allow-list",
		"link":     "outside the slug directory",
		"writable": "can be written by other users",
		"dotdot":   "is not a clean path",
		"remote":   "the local launcher runs a local absolute path",
	} {
		if v := e.waitState(op, "refused"); !strings.Contains(v.Message, want) {
			t.Errorf("%s: message %q, want it to contain %q", op, v.Message, want)
		}
	}
}

// TestDigestPinning runs a pinned executable whose digest matches, and
// refuses one whose digest does not; a redeploy is tried afresh.
func TestDigestPinning(t *testing.T) {
	var good, bad string
	e := newEnv(t, func(slugs string) launcher.Policy {
		good, bad = filepath.Join(slugs, "good"), filepath.Join(slugs, "bad")
		return launcher.Policy{Executables: []launcher.Executable{
			{Path: good, SHA256: digest(t, "#!/bin/sh\nenv > \"$SLUICE_DATA_DIR/started\"\nexec sleep 3600\n")},
			{Path: bad, SHA256: digest(t, "something else")},
		}, AllowEnv: []string{"PATH"}}
	})
	e.slug("good")
	e.slug("bad")
	e.store.put(spec("good", good, map[string]string{"GREETING": "hello", "PATH": "/usr/bin:/bin"}), spec("bad", bad, nil))
	v := e.waitState("bad", "refused")
	if !strings.Contains(v.Message, "has SHA-256") || !strings.Contains(v.Message, "the allow-list pins") {
		t.Errorf("bad: message %q", v.Message)
	}
	e.waitState("good", "running")
	started := filepath.Join(e.node, "launched", "good", "started")
	var lines []string
	sluicetest.WaitFor(t, 30*time.Second, "the slug to start", func() bool {
		b, err := os.ReadFile(started)
		lines = strings.Split(string(b), "\n")
		return err == nil && slices.Contains(lines, "SLUICE_LAUNCH=")
	})
	for _, want := range []string{"GREETING=hello", "PATH=/usr/bin:/bin", "SLUICE_DATA_DIR=" + filepath.Join(e.node, "launched", "good"),
		"SLUICE_CONTROL_TOKENS_FILE=/etc/sluice/tokens", "SLUICE_HOST=k-good"} {
		if !slices.Contains(lines, want) {
			t.Errorf("the slug's environment lacks %s:\n%s", want, strings.Join(lines, "\n"))
		}
	}
	// The bad one fixed and redeployed: tried again.
	if err := os.WriteFile(bad, []byte("something else"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.store.put(spec("good", good, map[string]string{"GREETING": "hello", "PATH": "/usr/bin:/bin"}), spec("bad", bad, nil))
	sluicetest.WaitFor(t, 30*time.Second, "bad to be tried again", func() bool {
		for _, v := range e.l.Launched() {
			if v.Operator == "bad" {
				return v.State != "refused"
			}
		}
		return false
	})
}

func digest(t *testing.T, content string) string {
	t.Helper()
	h := sha256.Sum256([]byte(content))
	return hex.EncodeToString(h[:])
}

func TestDeniedEnv(t *testing.T) {
	for _, name := range []string{"LD_PRELOAD", "ld_preload", "LD_LIBRARY_PATH", "LD_AUDIT", "DYLD_INSERT_LIBRARIES", "PERL5OPT", "PERL5LIB", "PERLLIB",
		"PYTHONPATH", "PYTHONSTARTUP", "PYTHONWARNINGS", "NODE_OPTIONS", "RUBYOPT", "BASH_ENV", "BASH_FUNC_ls", "ENV", "JAVA_TOOL_OPTIONS",
		"_JAVA_OPTIONS", "GCONV_PATH", "GLIBC_TUNABLES", "PATH", "IFS", "PS4", "OPENSSL_CONF", "GIT_SSH_COMMAND", "SSL_CERT_FILE", "GODEBUG",
		"SLUICE_DATA_DIR", "SLUICE_CONTROL_TOKENS", "SLUICE_LAUNCH_ALLOW"} {
		if _, denied := launcher.DeniedEnv(name); !denied {
			t.Errorf("%s is not denied", name)
		}
	}
	for _, name := range []string{"LOG_LEVEL", "PORT", "HOME", "NODE_ENV", "SLUICE_HOST_ONLY", "SLUICE_KAFKA_BROKERS", "OTEL_SERVICE_NAME", "TZ", "LANG"} {
		if why, denied := launcher.DeniedEnv(name); denied {
			t.Errorf("%s is denied: %s", name, why)
		}
	}
	p := launcher.Policy{SlugDir: "/opt/slugs", AllowEnv: []string{"PATH"}}
	got := p.CheckEnv(map[string]string{"PATH": "/bin", "PYTHONPATH": "/x", "A": "1", "1BAD": "x"})
	if len(got) != 2 || !strings.HasPrefix(got[0], "environment.1BAD: not a variable name") || !strings.HasPrefix(got[1], "environment.PYTHONPATH: refused") {
		t.Errorf("CheckEnv = %q", got)
	}
}

func TestPolicyConfig(t *testing.T) {
	exes, err := launcher.ParseExecutables(" /opt/a, /opt/b@sha256:" + strings.Repeat("ab", 32))
	if err != nil || len(exes) != 2 || exes[1].SHA256 != strings.Repeat("ab", 32) || exes[0].String() != "/opt/a" {
		t.Fatalf("ParseExecutables = %+v, %v", exes, err)
	}
	for _, bad := range []string{"relative/x", "/opt/../x", "/opt/x@md5:00", "/opt/x@sha256:zz"} {
		if _, err := launcher.ParseExecutables(bad); err == nil {
			t.Errorf("ParseExecutables(%q) accepted", bad)
		}
	}
	if err := (launcher.Policy{}).Validate(); err == nil || !strings.Contains(err.Error(), "no executable is allowed") {
		t.Errorf("empty policy: %v", err)
	}
	pol, err := launcher.PolicyFromEnv(func(k string) string {
		return map[string]string{launcher.EnvAllow: "/opt/a", launcher.EnvDir: "/opt/slugs", launcher.EnvAllowEnv: "PATH, TMPDIR"}[k]
	})
	if err != nil || pol.SlugDir != "/opt/slugs" || !slices.Equal(pol.AllowEnv, []string{"PATH", "TMPDIR"}) || len(pol.Executables) != 1 {
		t.Errorf("PolicyFromEnv = %+v, %v", pol, err)
	}
	if _, err := launcher.New(launcher.Config{Node: "n1", DataDir: "/tmp/x"}); err == nil || !strings.Contains(err.Error(), "Store") || !strings.Contains(err.Error(), "no executable is allowed") {
		t.Errorf("New without a store or a policy: %v", err)
	}
}
