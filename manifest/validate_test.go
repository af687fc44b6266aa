package manifest

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/control/api"
)

// valid returns a manifest with every field set and valid.
func valid() api.Manifest {
	return api.Manifest{
		Name:        "count",
		Kind:        "counter",
		Executable:  "/opt/sluice/wordcount-node",
		Instances:   4,
		KeyGroups:   256,
		Inputs:      []api.ManifestInput{{Stream: "words", Routing: "group-by"}, {Stream: "ticks"}},
		Outputs:     []string{"counts", "stats"},
		CPUs:        0.5,
		Mem:         256,
		Disk:        1024,
		Retries:     3,
		Environment: map[string]string{"LOG_LEVEL": "debug", "_X1": ""},
		Restart: &api.ManifestRestart{
			MaxRestarts: 10, Window: "1m", InitialBackoff: "10ms", MaxBackoff: "5s", DeadLetterAfter: 3,
		},
	}
}

func TestValidateAccepts(t *testing.T) {
	cases := []struct {
		name string
		edit func(*api.Manifest)
	}{
		{"every field set", func(*api.Manifest) {}},
		{"only a name", func(m *api.Manifest) { *m = api.Manifest{Name: "count"} }},
		{"name of 200 characters", func(m *api.Manifest) { m.Name = strings.Repeat("a", 200) }},
		{"name with every allowed character", func(m *api.Manifest) { m.Name = "aZ09-_." }},
		{"instances equal to keyGroups", func(m *api.Manifest) { m.Instances, m.KeyGroups = 8, 8 }},
		{"keyGroups at its maximum", func(m *api.Manifest) { m.KeyGroups = 32768 }},
		{"instances without keyGroups", func(m *api.Manifest) { m.Instances, m.KeyGroups = 1000, 0 }},
		{"every routing spelling", func(m *api.Manifest) {
			m.Inputs = []api.ManifestInput{
				{Stream: "a", Routing: "shuffle"}, {Stream: "b", Routing: "round-robin"}, {Stream: "c", Routing: "broadcast"},
				{Stream: "d", Routing: "roundrobin"}, {Stream: "e", Routing: "GROUP-BY"}, {Stream: "f"},
			}
		}},
		{"file URI", func(m *api.Manifest) { m.Executable = "file:///opt/node" }},
		{"file URI on localhost", func(m *api.Manifest) { m.Executable = "file://localhost/opt/node" }},
		{"http URI", func(m *api.Manifest) { m.Executable = "http://artifacts:8080/node" }},
		{"https URI", func(m *api.Manifest) { m.Executable = "HTTPS://example.com/node?v=2" }},
		{"zero durations", func(m *api.Manifest) { m.Restart = &api.ManifestRestart{Window: "0s", MaxBackoff: "0"} }},
		{"initialBackoff up to the default maxBackoff", func(m *api.Manifest) { m.Restart = &api.ManifestRestart{InitialBackoff: "5s"} }},
		{"maxBackoff above the default initialBackoff", func(m *api.Manifest) { m.Restart = &api.ManifestRestart{MaxBackoff: "1s"} }},
		{"an input also an output", func(m *api.Manifest) { m.Outputs = []string{"words"} }},
		{"environment value with newline", func(m *api.Manifest) { m.Environment = map[string]string{"CERT": "a\nb"} }},
		{"tumbling window", func(m *api.Manifest) {
			m.Window = &api.ManifestWindow{Type: "tumbling", Size: "10s", Lateness: "2s", Emit: "on-update"}
		}},
		{"hopping window", func(m *api.Manifest) { m.Window = &api.ManifestWindow{Type: "Hopping", Size: "1m", Slide: "10s"} }},
		{"session window", func(m *api.Manifest) { m.Window = &api.ManifestWindow{Type: "session", Gap: "30s"} }},
		{"count window", func(m *api.Manifest) { m.Window = &api.ManifestWindow{Type: "count", Count: 100, Emit: "on-close"} }},
		{"global window", func(m *api.Manifest) { m.Window = &api.ManifestWindow{Type: "global"} }},
		{"window without a type", func(m *api.Manifest) { m.Window = &api.ManifestWindow{Size: "5s"} }},
		{"autoscale, every field", func(m *api.Manifest) {
			m.Autoscale = &api.ManifestAutoscale{Min: 2, Max: 16, TargetUtilization: 0.6, ScaleDownAfter: "10m", CoolDown: "30s", DryRun: true}
		}},
		{"autoscale, empty: the defaults", func(m *api.Manifest) { m.Autoscale = &api.ManifestAutoscale{} }},
		{"autoscale max at keyGroups", func(m *api.Manifest) { m.KeyGroups, m.Autoscale = 8, &api.ManifestAutoscale{Max: 8} }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := valid()
			tc.edit(&m)
			if err := Validate(m); err != nil {
				t.Errorf("got %v, want nil", err)
			}
		})
	}
}

func TestValidateRejects(t *testing.T) {
	cases := []struct {
		name string
		edit func(*api.Manifest)
		want []string // every problem, in order
	}{
		{"empty name", func(m *api.Manifest) { m.Name = "" },
			[]string{"name: must not be empty"}},
		{"name too long", func(m *api.Manifest) { m.Name = strings.Repeat("a", 201) },
			[]string{"name: must be at most 200 characters, got 201"}},
		{"name with a space", func(m *api.Manifest) { m.Name = "word count" },
			[]string{`name: "word count" has ' ': use letters, digits, '-', '_' and '.'`}},
		{"name ..", func(m *api.Manifest) { m.Name = ".." },
			[]string{`name: ".." starts with '.': start with a letter or a digit (names are used as URL path segments, file names and command-line arguments)`}},
		{"name .", func(m *api.Manifest) { m.Name = "." },
			[]string{`name: "." starts with '.': start with a letter or a digit (names are used as URL path segments, file names and command-line arguments)`}},
		{"name like a flag", func(m *api.Manifest) { m.Name = "-f" },
			[]string{`name: "-f" starts with '-': start with a letter or a digit (names are used as URL path segments, file names and command-line arguments)`}},
		{"kind ..", func(m *api.Manifest) { m.Kind = ".." },
			[]string{`kind: ".." starts with '.': start with a letter or a digit (names are used as URL path segments, file names and command-line arguments)`}},
		{"streams . and ..", func(m *api.Manifest) { m.Inputs[0].Stream, m.Outputs[1] = ".", ".." },
			[]string{`inputs[0].stream: "." starts with '.': start with a letter or a digit (names are used as URL path segments, file names and command-line arguments)`,
				`outputs[1]: ".." starts with '.': start with a letter or a digit (names are used as URL path segments, file names and command-line arguments)`}},
		{"kind with a slash", func(m *api.Manifest) { m.Kind = "a/b" },
			[]string{`kind: "a/b" has '/': use letters, digits, '-', '_' and '.'`}},
		{"relative executable", func(m *api.Manifest) { m.Executable = "bin/node" },
			[]string{`executable: want an absolute path or a file://, http:// or https:// URI, got "bin/node"`}},
		{"executable with another scheme", func(m *api.Manifest) { m.Executable = "s3://bucket/node" },
			[]string{`executable: want an absolute path or a file://, http:// or https:// URI, got "s3://bucket/node"`}},
		{"relative file URI", func(m *api.Manifest) { m.Executable = "file:node" },
			[]string{`executable: file URI "file:node" must name an absolute path on the node, as in file:///opt/sluice/node`}},
		{"file URI on another host", func(m *api.Manifest) { m.Executable = "file://other/opt/node" },
			[]string{`executable: file URI "file://other/opt/node" must name an absolute path on the node, as in file:///opt/sluice/node`}},
		{"http URI without host", func(m *api.Manifest) { m.Executable = "http:///node" },
			[]string{`executable: URI "http:///node" has no host`}},
		{"executable with a newline", func(m *api.Manifest) { m.Executable = "/opt/node\n" },
			[]string{`executable: "/opt/node\n" contains a control character`}},
		{"autoscale, every field wrong", func(m *api.Manifest) {
			m.Autoscale = &api.ManifestAutoscale{Min: -1, Max: -2, TargetUtilization: 1.5, ScaleDownAfter: "5 minutes", CoolDown: "-1s"}
		}, []string{"autoscale.min: must be ≥ 0 (0 for 1), got -1", "autoscale.max: must be ≥ 0 (0 for the key-group count), got -2",
			"autoscale.targetUtilization: must be in (0, 1] (0 for the default, 0.7), got 1.5",
			`autoscale.scaleDownAfter: bad duration "5 minutes": unknown unit " minutes"; want a number and a unit (ns, us, ms, s, m, h), such as "30s" or "1h30m"`,
			"autoscale.coolDown: must be ≥ 0, got -1s"}},
		{"autoscale max above keyGroups", func(m *api.Manifest) { m.KeyGroups, m.Autoscale = 8, &api.ManifestAutoscale{Max: 9} },
			[]string{"autoscale.max: must be ≤ keyGroups (8): an operator has at most one instance per key group, got 9"}},
		{"autoscale min above max", func(m *api.Manifest) { m.Autoscale = &api.ManifestAutoscale{Min: 5, Max: 4} },
			[]string{"autoscale.min: must be ≤ max (4), got 5"}},
		{"negative instances", func(m *api.Manifest) { m.Instances = -1 },
			[]string{"instances: must be ≥ 1, got -1"}},
		{"negative keyGroups", func(m *api.Manifest) { m.KeyGroups = -1 },
			[]string{"keyGroups: must be between 1 and 32768, got -1"}},
		{"too many keyGroups", func(m *api.Manifest) { m.KeyGroups = 32769 },
			[]string{"keyGroups: must be between 1 and 32768, got 32769"}},
		{"more instances than keyGroups", func(m *api.Manifest) { m.Instances, m.KeyGroups = 8, 4 },
			[]string{"instances: must be ≤ keyGroups (4), got 8"}},
		{"more instances than any keyGroups", func(m *api.Manifest) { m.Instances, m.KeyGroups = 40000, 0 },
			[]string{"instances: must be ≤ 32768 (the most key groups an operator can have), got 40000"}},
		{"input without stream", func(m *api.Manifest) { m.Inputs[1].Stream = "" },
			[]string{"inputs[1].stream: must not be empty"}},
		{"input with a bad stream name", func(m *api.Manifest) { m.Inputs[0].Stream = "a b" },
			[]string{`inputs[0].stream: "a b" has ' ': use letters, digits, '-', '_' and '.'`}},
		{"input listed twice", func(m *api.Manifest) { m.Inputs = append(m.Inputs, api.ManifestInput{Stream: "words"}) },
			[]string{`inputs[2].stream: stream "words" is listed twice (also inputs[0])`}},
		{"unknown routing", func(m *api.Manifest) { m.Inputs[1].Routing = "hash" },
			[]string{`inputs[1].routing: unknown routing "hash": want shuffle, round-robin, group-by or broadcast`}},
		{"empty output", func(m *api.Manifest) { m.Outputs[1] = "" },
			[]string{"outputs[1]: must not be empty"}},
		{"output listed twice", func(m *api.Manifest) { m.Outputs = append(m.Outputs, "counts") },
			[]string{`outputs[2]: stream "counts" is listed twice (also outputs[0])`}},
		{"negative cpus", func(m *api.Manifest) { m.CPUs = -0.5 },
			[]string{"cpus: must be ≥ 0, got -0.5"}},
		{"NaN mem", func(m *api.Manifest) { m.Mem = math.NaN() },
			[]string{"mem: must be a finite number ≥ 0, got NaN"}},
		{"infinite disk", func(m *api.Manifest) { m.Disk = math.Inf(1) },
			[]string{"disk: must be a finite number ≥ 0, got +Inf"}},
		{"negative retries", func(m *api.Manifest) { m.Retries = -1 },
			[]string{"retries: must be ≥ 0, got -1"}},
		{"empty environment name", func(m *api.Manifest) { m.Environment[""] = "x" },
			[]string{"environment: variable name must not be empty"}},
		{"environment name with a dash", func(m *api.Manifest) { m.Environment["LOG-LEVEL"] = "x" },
			[]string{`environment: bad variable name "LOG-LEVEL": want letters, digits and '_', not starting with a digit`}},
		{"environment name starting with a digit", func(m *api.Manifest) { m.Environment["1X"] = "x" },
			[]string{`environment: bad variable name "1X": want letters, digits and '_', not starting with a digit`}},
		{"environment value with NUL", func(m *api.Manifest) { m.Environment["LOG_LEVEL"] = "a\x00" },
			[]string{"environment.LOG_LEVEL: value must not contain a NUL byte"}},
		{"negative out-of-orderness", func(m *api.Manifest) { m.Watermarks = &api.ManifestWatermarks{OutOfOrderness: "-2s"} },
			[]string{"watermarks.outOfOrderness: must be ≥ 0, got -2s"}},
		{"idleness without unit", func(m *api.Manifest) { m.Watermarks = &api.ManifestWatermarks{Idleness: "5", Interval: "-1ms"} },
			[]string{`watermarks.idleness: bad duration "5": missing unit; want a number and a unit (ns, us, ms, s, m, h), such as "30s" or "1h30m"`,
				"watermarks.interval: must be ≥ 0, got -1ms"}},
		{"window size 0", func(m *api.Manifest) { m.Window = &api.ManifestWindow{Type: "tumbling", Size: "0s"} },
			[]string{"window.size: must be > 0, got 0s"}},
		{"window size missing", func(m *api.Manifest) { m.Window = &api.ManifestWindow{Type: "tumbling"} },
			[]string{"window.size: must be > 0, got 0s"}},
		{"window size < 0", func(m *api.Manifest) { m.Window = &api.ManifestWindow{Type: "hopping", Size: "-1s", Slide: "1s"} },
			[]string{"window.size: must be > 0, got -1s"}},
		{"window slide 0", func(m *api.Manifest) { m.Window = &api.ManifestWindow{Type: "hopping", Size: "1m"} },
			[]string{"window.slide: must be > 0, got 0s"}},
		{"window slide > size", func(m *api.Manifest) { m.Window = &api.ManifestWindow{Type: "hopping", Size: "1m", Slide: "2m"} },
			[]string{"window.slide: must be ≤ size (1m0s), got 2m0s: windows would leave gaps"}},
		{"window lateness < 0", func(m *api.Manifest) { m.Window = &api.ManifestWindow{Type: "tumbling", Size: "1s", Lateness: "-1s"} },
			[]string{"window.lateness: must be ≥ 0, got -1s"}},
		{"window lateness on counts", func(m *api.Manifest) { m.Window = &api.ManifestWindow{Type: "count", Count: 3, Lateness: "1s"} },
			[]string{"window.lateness: only event-time windows (tumbling, hopping, session) have lateness, not count"}},
		{"window gap 0", func(m *api.Manifest) { m.Window = &api.ManifestWindow{Type: "session", Gap: "0s"} },
			[]string{"window.gap: must be > 0, got 0s"}},
		{"window count 0", func(m *api.Manifest) { m.Window = &api.ManifestWindow{Type: "count"} },
			[]string{"window.count: must be > 0, got 0"}},
		{"window count < 0", func(m *api.Manifest) { m.Window = &api.ManifestWindow{Type: "count", Count: -5} },
			[]string{"window.count: must be > 0, got -5"}},
		{"window gap on tumbling", func(m *api.Manifest) { m.Window = &api.ManifestWindow{Type: "tumbling", Size: "1s", Gap: "1s"} },
			[]string{"window.gap: tumbling windows have no gap: remove it (gap is for type session)"}},
		{"window slide on tumbling", func(m *api.Manifest) { m.Window = &api.ManifestWindow{Type: "tumbling", Size: "1s", Slide: "1s"} },
			[]string{"window.slide: tumbling windows have no slide: remove it (or use type hopping)"}},
		{"window size and count on global", func(m *api.Manifest) { m.Window = &api.ManifestWindow{Type: "global", Size: "1s", Count: 2} },
			[]string{"window.size: global windows have no size: remove it", "window.count: global windows have no count: remove it (count is for type count)"}},
		{"window type unknown", func(m *api.Manifest) { m.Window = &api.ManifestWindow{Type: "sliding", Size: "1s"} },
			[]string{`window.type: unknown window type "sliding": want tumbling, hopping, session, count or global`}},
		{"window emit unknown and size not a duration", func(m *api.Manifest) { m.Window = &api.ManifestWindow{Size: "10", Emit: "always"} },
			[]string{`window.emit: unknown emit mode "always": want on-close or on-update`,
				`window.size: bad duration "10": missing unit; want a number and a unit (ns, us, ms, s, m, h), such as "30s" or "1h30m"`}},
		{"negative maxRestarts", func(m *api.Manifest) { m.Restart.MaxRestarts = -1 },
			[]string{"restart.maxRestarts: must be ≥ 0, got -1"}},
		{"window in words", func(m *api.Manifest) { m.Restart.Window = "5 minutes" },
			[]string{`restart.window: bad duration "5 minutes": unknown unit " minutes"; want a number and a unit (ns, us, ms, s, m, h), such as "30s" or "1h30m"`}},
		{"window without unit", func(m *api.Manifest) { m.Restart.Window = "5" },
			[]string{`restart.window: bad duration "5": missing unit; want a number and a unit (ns, us, ms, s, m, h), such as "30s" or "1h30m"`}},
		{"window not a number", func(m *api.Manifest) { m.Restart.Window = "soon" },
			[]string{`restart.window: bad duration "soon": want a number and a unit (ns, us, ms, s, m, h), such as "30s" or "1h30m"`}},
		{"negative window", func(m *api.Manifest) { m.Restart.Window = "-1m" },
			[]string{"restart.window: must be ≥ 0, got -1m0s"}},
		{"bad initialBackoff", func(m *api.Manifest) { m.Restart.InitialBackoff = "1 s" },
			[]string{`restart.initialBackoff: bad duration "1 s": unknown unit " s"; want a number and a unit (ns, us, ms, s, m, h), such as "30s" or "1h30m"`}},
		{"negative maxBackoff", func(m *api.Manifest) { m.Restart.MaxBackoff = "-5s" },
			[]string{"restart.maxBackoff: must be ≥ 0, got -5s"}},
		{"maxBackoff below initialBackoff", func(m *api.Manifest) { m.Restart.InitialBackoff, m.Restart.MaxBackoff = "2s", "1s" },
			[]string{"restart.maxBackoff: must be ≥ initialBackoff (2s), got 1s"}},
		{"initialBackoff above the default maxBackoff", func(m *api.Manifest) { m.Restart = &api.ManifestRestart{InitialBackoff: "10s"} },
			[]string{"restart.initialBackoff: must be ≤ maxBackoff (default 5s), got 10s; set restart.maxBackoff too"}},
		{"maxBackoff below the default initialBackoff", func(m *api.Manifest) { m.Restart = &api.ManifestRestart{MaxBackoff: "1ms"} },
			[]string{"restart.maxBackoff: must be ≥ initialBackoff (default 10ms), got 1ms"}},
		{"negative deadLetterAfter", func(m *api.Manifest) { m.Restart.DeadLetterAfter = -3 },
			[]string{"restart.deadLetterAfter: must be ≥ 0, got -3"}},
		{"every problem at once", func(m *api.Manifest) {
			*m = api.Manifest{
				Kind: "?", Executable: "node", Instances: -2, KeyGroups: 40000,
				Inputs:  []api.ManifestInput{{Stream: "a", Routing: "hash"}, {Stream: "a"}},
				Outputs: []string{""}, CPUs: -1, Mem: -1, Disk: -1, Retries: -1,
				Environment: map[string]string{"a b": "", "B": "\x00"},
				Restart:     &api.ManifestRestart{MaxRestarts: -1, Window: "x", InitialBackoff: "-1s", MaxBackoff: "y", DeadLetterAfter: -1},
			}
		}, []string{
			"name: must not be empty",
			`kind: "?" has '?': use letters, digits, '-', '_' and '.'`,
			`executable: want an absolute path or a file://, http:// or https:// URI, got "node"`,
			"instances: must be ≥ 1, got -2",
			"keyGroups: must be between 1 and 32768, got 40000",
			`inputs[0].routing: unknown routing "hash": want shuffle, round-robin, group-by or broadcast`,
			`inputs[1].stream: stream "a" is listed twice (also inputs[0])`,
			"outputs[0]: must not be empty",
			"cpus: must be ≥ 0, got -1",
			"mem: must be ≥ 0, got -1",
			"disk: must be ≥ 0, got -1",
			"retries: must be ≥ 0, got -1",
			"environment.B: value must not contain a NUL byte",
			`environment: bad variable name "a b": want letters, digits and '_', not starting with a digit`,
			"restart.maxRestarts: must be ≥ 0, got -1",
			`restart.window: bad duration "x": want a number and a unit (ns, us, ms, s, m, h), such as "30s" or "1h30m"`,
			"restart.initialBackoff: must be ≥ 0, got -1s",
			`restart.maxBackoff: bad duration "y": want a number and a unit (ns, us, ms, s, m, h), such as "30s" or "1h30m"`,
			"restart.deadLetterAfter: must be ≥ 0, got -1",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := valid()
			tc.edit(&m)
			err := Validate(m)
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("got %v, want a *ValidationError", err)
			}
			if got := ve.Lines(); !slices.Equal(got, tc.want) {
				t.Errorf("got problems\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(tc.want, "\n\t"))
			}
			if ve.Name != m.Name {
				t.Errorf("got Name %q, want %q", ve.Name, m.Name)
			}
		})
	}
}

func TestValidationErrorMessage(t *testing.T) {
	m := valid()
	m.Instances = -1
	if got, want := Validate(m).Error(), `manifest "count": instances: must be ≥ 1, got -1`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	m.Retries = -1
	if got, want := Validate(m).Error(), `manifest "count": 2 problems: instances: must be ≥ 1, got -1; retries: must be ≥ 0, got -1`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
