package manifest

import (
	"fmt"
	"math"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/internal/core"
)

// Validate checks m against the rules of a manifest and returns a
// *ValidationError listing every problem, or nil. Zero fields mean "unset"
// and are valid (except the name); set fields must be:
//
//   - name, kind: 1–200 letters, digits, '-', '_' or '.', the first a letter
//     or a digit, so that no name is ".", "..", hidden or a flag
//     (core.ValidName)
//   - executable: an absolute path, or a file://, http:// or https:// URI
//   - instances ≥ 1; keyGroups in [1, 32768]; instances ≤ keyGroups
//   - inputs: valid stream names (the rule of names), none twice, routing
//     one of shuffle, round-robin, group-by or broadcast (core.ParseRouting)
//   - outputs: valid stream names, none twice
//   - cpus, mem, disk: finite and ≥ 0; retries ≥ 0
//   - environment: keys are variable names ([A-Za-z_][A-Za-z0-9_]*),
//     values have no NUL byte
//   - restart: durations in Go syntax ("30s", "1h30m") and ≥ 0, maxBackoff ≥
//     initialBackoff (each defaulting as in core.RestartPolicy);
//     maxRestarts, deadLetterAfter ≥ 0
//   - window: type one of tumbling, hopping, session, count or global, emit
//     on-close or on-update, durations in Go syntax; with a type, the
//     rules of core.WindowSpec (size, slide, gap, count > 0 where the type
//     has them and absent where not, slide ≤ size, lateness ≥ 0 and only on
//     event-time windows); without one, what the fields change of the
//     kind's windows is checked by the server
//   - autoscale: min, max ≥ 0, min ≤ max, max ≤ keyGroups (when set),
//     targetUtilization in (0, 1], scaleDownAfter and coolDown durations
//     ≥ 0 (zero fields take core.AutoscaleSpec's defaults)
//   - runtime: go (or absent) or wasm; a wasm operator has a module (an
//     absolute path ending in .wasm), no executable, and no kind but
//     core.WasmKind; module only with runtime wasm. That the file exists,
//     is WebAssembly and exports the guest ABI is checked by the server
//     (wasmop.CheckModule)
//
// Validate does not know the operator's kind, so it cannot check what
// depends on it (instances against the kind's key groups, a kind no node
// hosts); the server does.
func Validate(m api.Manifest) error {
	var v validation
	v.name("name", m.Name)
	if m.Kind != "" {
		v.name("kind", m.Kind)
	}
	if m.Executable != "" {
		if p := executableProblem(m.Executable); p != "" {
			v.add("executable", "%s", p)
		}
	}
	v.parallelism(m.Instances, m.KeyGroups)
	v.inputs(m.Inputs)
	v.streams("outputs", m.Outputs)
	v.resource("cpus", m.CPUs)
	v.resource("mem", m.Mem)
	v.resource("disk", m.Disk)
	if m.Retries < 0 {
		v.add("retries", "must be ≥ 0, got %d", m.Retries)
	}
	v.environment(m.Environment)
	if m.Restart != nil {
		v.restart(*m.Restart)
	}
	if w := m.Watermarks; w != nil {
		v.duration("watermarks.outOfOrderness", w.OutOfOrderness)
		v.duration("watermarks.idleness", w.Idleness)
		v.duration("watermarks.interval", w.Interval)
	}
	if w := m.Window; w != nil {
		v.window(*w)
	}
	if a := m.Autoscale; a != nil {
		v.autoscale(*a, m.KeyGroups)
	}
	v.runtime(m)
	if len(v.problems) == 0 {
		return nil
	}
	return &ValidationError{Name: m.Name, Problems: v.problems}
}

// validation collects the problems of one manifest.
type validation struct {
	problems []FieldError
}

func (v *validation) add(field, format string, args ...any) {
	v.problems = append(v.problems, FieldError{Field: field, Problem: fmt.Sprintf(format, args...)})
}

func (v *validation) name(field, s string) {
	if err := core.ValidName(s); err != nil {
		v.add(field, "%v", err)
	}
}

func (v *validation) parallelism(instances, keyGroups int) {
	if instances < 0 {
		v.add("instances", "must be ≥ 1, got %d", instances)
	}
	if keyGroups < 0 || keyGroups > core.MaxKeyGroups {
		v.add("keyGroups", "must be between 1 and %d, got %d", core.MaxKeyGroups, keyGroups)
	}
	switch {
	case instances > 0 && keyGroups > 0 && keyGroups <= core.MaxKeyGroups && instances > keyGroups:
		v.add("instances", "must be ≤ keyGroups (%d), got %d", keyGroups, instances)
	case instances > core.MaxKeyGroups && keyGroups == 0:
		v.add("instances", "must be ≤ %d (the most key groups an operator can have), got %d", core.MaxKeyGroups, instances)
	}
}

func (v *validation) inputs(ins []api.ManifestInput) {
	seen := map[string]int{}
	for i, in := range ins {
		field := fmt.Sprintf("inputs[%d]", i)
		v.name(field+".stream", in.Stream)
		if j, dup := seen[in.Stream]; dup && in.Stream != "" {
			v.add(field+".stream", "stream %q is listed twice (also inputs[%d])", in.Stream, j)
		} else if !dup {
			seen[in.Stream] = i
		}
		if _, err := core.ParseRouting(in.Routing); err != nil {
			v.add(field+".routing", "%v", err)
		}
	}
}

func (v *validation) streams(field string, ss []string) {
	seen := map[string]int{}
	for i, s := range ss {
		f := fmt.Sprintf("%s[%d]", field, i)
		v.name(f, s)
		if j, dup := seen[s]; dup && s != "" {
			v.add(f, "stream %q is listed twice (also %s[%d])", s, field, j)
		} else if !dup {
			seen[s] = i
		}
	}
}

func (v *validation) resource(field string, x float64) {
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		v.add(field, "must be a finite number ≥ 0, got %v", x)
	case x < 0:
		v.add(field, "must be ≥ 0, got %v", x)
	}
}

func (v *validation) environment(env map[string]string) {
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		switch {
		case k == "":
			v.add("environment", "variable name must not be empty")
		case !validEnvName(k):
			v.add("environment", "bad variable name %q: want letters, digits and '_', not starting with a digit", k)
		}
		if strings.IndexByte(env[k], 0) >= 0 {
			v.add("environment"+keyPath(k), "value must not contain a NUL byte")
		}
	}
}

func (v *validation) restart(r api.ManifestRestart) {
	if r.MaxRestarts < 0 {
		v.add("restart.maxRestarts", "must be ≥ 0, got %d", r.MaxRestarts)
	}
	v.duration("restart.window", r.Window)
	initial, initialOK := v.duration("restart.initialBackoff", r.InitialBackoff)
	maxb, maxOK := v.duration("restart.maxBackoff", r.MaxBackoff)
	if initialOK && maxOK {
		// Zero means the default, as in core.RestartPolicy.WithDefaults.
		switch {
		case initial > 0 && maxb > 0 && maxb < initial:
			v.add("restart.maxBackoff", "must be ≥ initialBackoff (%v), got %v", initial, maxb)
		case initial > core.DefaultMaxBackoff && maxb == 0:
			v.add("restart.initialBackoff", "must be ≤ maxBackoff (default %v), got %v; set restart.maxBackoff too", core.DefaultMaxBackoff, initial)
		case maxb > 0 && maxb < core.DefaultInitialBackoff && initial == 0:
			v.add("restart.maxBackoff", "must be ≥ initialBackoff (default %v), got %v", core.DefaultInitialBackoff, maxb)
		}
	}
	if r.DeadLetterAfter < 0 {
		v.add("restart.deadLetterAfter", "must be ≥ 0, got %d", r.DeadLetterAfter)
	}
}

// window checks a window mapping's syntax and, with a type (which makes
// it the whole spec, see Metadata), the rules of core.WindowSpec. Without a
// type its fields change the kind's windows, which the server checks.
func (v *validation) window(w api.ManifestWindow) {
	n := len(v.problems)
	if w.Type != "" {
		if _, err := core.ParseWindowType(w.Type); err != nil {
			v.add("window.type", "%v", err)
		}
	}
	if w.Emit != "" {
		if _, err := core.ParseWindowEmit(w.Emit); err != nil {
			v.add("window.emit", "%v", err)
		}
	}
	for _, d := range []struct{ field, s string }{{"size", w.Size}, {"slide", w.Slide}, {"gap", w.Gap}, {"lateness", w.Lateness}} {
		v.parseDuration("window."+d.field, d.s)
	}
	if w.Type == "" || len(v.problems) > n {
		return
	}
	for _, p := range windowSpec(w, nil).Problems() {
		v.add("window."+p.Field, "%s", p.Problem)
	}
}

// autoscale checks the autoscaler settings; against keyGroups only when
// the manifest sets it (else the server checks against the kind's).
func (v *validation) autoscale(a api.ManifestAutoscale, keyGroups int) {
	if a.Min < 0 {
		v.add("autoscale.min", "must be ≥ 0 (0 for 1), got %d", a.Min)
	}
	switch {
	case a.Max < 0:
		v.add("autoscale.max", "must be ≥ 0 (0 for the key-group count), got %d", a.Max)
	case keyGroups > 0 && a.Max > keyGroups:
		v.add("autoscale.max", "must be ≤ keyGroups (%d): an operator has at most one instance per key group, got %d", keyGroups, a.Max)
	case a.Max > 0 && a.Min > a.Max:
		v.add("autoscale.min", "must be ≤ max (%d), got %d", a.Max, a.Min)
	}
	if a.TargetUtilization < 0 || a.TargetUtilization > 1 || math.IsNaN(a.TargetUtilization) {
		v.add("autoscale.targetUtilization", "must be in (0, 1] (0 for the default, %v), got %v", core.DefaultTargetUtilization, a.TargetUtilization)
	}
	v.duration("autoscale.scaleDownAfter", a.ScaleDownAfter)
	v.duration("autoscale.coolDown", a.CoolDown)
}

// duration parses a duration (restart policy, watermarks); "" is 0 (the default). ok is false
// if s is invalid or negative (and the problem recorded).
func (v *validation) duration(field, s string) (d time.Duration, ok bool) {
	if d, ok = v.parseDuration(field, s); ok && d < 0 {
		v.add(field, "must be ≥ 0, got %v", d)
		return 0, false
	}
	return d, ok
}

// parseDuration parses a duration; "" is 0. ok is false if s is not a
// duration (and the problem recorded).
func (v *validation) parseDuration(field, s string) (d time.Duration, ok bool) {
	if s == "" {
		return 0, true
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		why := strings.TrimPrefix(err.Error(), "time: ")
		if i := strings.Index(why, " in duration "); i >= 0 {
			why = why[:i] + "; "
		} else {
			why = "" // "invalid duration "5 minutes"" says no more than we do
		}
		v.add(field, "bad duration %q: %swant a number and a unit (ns, us, ms, s, m, h), such as \"30s\" or \"1h30m\"", s, why)
		return 0, false
	}
	return d, true
}

// executableProblem says what is wrong with an executable, or "".
func executableProblem(s string) string {
	for _, c := range s {
		if c < 0x20 || c == 0x7f {
			return fmt.Sprintf("%q contains a control character", s)
		}
	}
	want := fmt.Sprintf("want an absolute path or a file://, http:// or https:// URI, got %q", s)
	if strings.HasPrefix(s, "/") {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil {
		return want
	}
	switch strings.ToLower(u.Scheme) {
	case "file":
		if (u.Host == "" || u.Host == "localhost") && strings.HasPrefix(u.Path, "/") {
			return ""
		}
		return fmt.Sprintf("file URI %q must name an absolute path on the node, as in file:///opt/sluice/node", s)
	case "http", "https":
		if u.Host != "" {
			return ""
		}
		return fmt.Sprintf("URI %q has no host", s)
	}
	return want
}

// validEnvName reports whether s is a POSIX-style environment variable name.
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

// runtime checks runtime and module.
func (v *validation) runtime(m api.Manifest) {
	rt, err := core.ParseRuntime(m.Runtime)
	if err != nil {
		v.add("runtime", "%v", err)
		return
	}
	if rt != core.RuntimeWasm {
		if m.Module != "" {
			v.add("module", "only a wasm operator has a module: set runtime: wasm, or remove module")
		}
		return
	}
	switch {
	case m.Module == "":
		v.add("module", "a wasm operator needs the absolute path of its .wasm file on the nodes")
	case !filepath.IsAbs(m.Module) || filepath.Clean(m.Module) != m.Module:
		v.add("module", "%q: give an absolute, clean path (the same on every node)", m.Module)
	case !strings.HasSuffix(m.Module, ".wasm"):
		v.add("module", "%q: a WebAssembly module's file name ends in .wasm", m.Module)
	}
	if m.Executable != "" {
		v.add("executable", "a wasm operator runs in the node, not in an executable: remove executable")
	}
	if m.Kind != "" && m.Kind != core.WasmKind {
		v.add("kind", "a wasm operator's kind is %s (its code is the module): remove kind", core.WasmKind)
	}
}
