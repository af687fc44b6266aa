package manifest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/control/api"
)

const fullYAML = `# every field
name: count
kind: counter
executable: /opt/sluice/wordcount-node
instances: 4
keyGroups: 256
inputs:
  - stream: words
    routing: group-by
  - stream: ticks
outputs: [counts, stats]
cpus: 0.5
mem: 256
disk: 1024
retries: 3
environment:
  LOG_LEVEL: debug
  _X1: ""
restart:
  maxRestarts: 10
  window: 1m
  initialBackoff: 10ms
  maxBackoff: 5s
  deadLetterAfter: 3
`

const fullJSON = `{
	"name": "count",
	"kind": "counter",
	"executable": "\/opt\/sluice\/wordcount-node",
	"instances": 4,
	"keyGroups": 256,
	"inputs": [{"stream": "words", "routing": "group-by"}, {"stream": "ticks"}],
	"outputs": ["counts", "stats"],
	"cpus": 0.5, "mem": 256, "disk": 1.024e3,
	"retries": 3,
	"environment": {"LOG_LEVEL": "debug", "_X1": ""},
	"restart": {"maxRestarts": 10, "window": "1m", "initialBackoff": "10ms", "maxBackoff": "5s", "deadLetterAfter": 3}
}`

func mustParse(t *testing.T, in string) []api.Manifest {
	t.Helper()
	ms, err := Parse([]byte(in))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return ms
}

func TestParseEveryField(t *testing.T) {
	for name, in := range map[string]string{"yaml": fullYAML, "json": fullJSON} {
		t.Run(name, func(t *testing.T) {
			ms := mustParse(t, in)
			if want := []api.Manifest{valid()}; !reflect.DeepEqual(ms, want) {
				t.Errorf("got %+v, want %+v", ms, want)
			}
		})
	}
}

// TestParseJSONAndYAMLAgree parses pairs of texts that say the same thing.
func TestParseJSONAndYAMLAgree(t *testing.T) {
	cases := []struct{ name, yaml, json string }{
		{"name only", "name: a\n", `{"name": "a"}`},
		{"nulls are unset", "name: a\nkind: ~\ninputs:\nrestart: null\n", `{"name": "a", "kind": null, "inputs": null, "restart": null}`},
		{"empty lists and mappings are unset", "name: a\ninputs: []\noutputs: []\nenvironment: {}\nrestart: {}\n",
			`{"name": "a", "inputs": [], "outputs": [], "environment": {}, "restart": {}}`},
		{"numbers as strings where strings are wanted", "name: 123\nenvironment:\n  PORT: 8080\n  DEBUG: true\n  RATE: 0.5\n",
			`{"name": "123", "environment": {"PORT": "8080", "DEBUG": "true", "RATE": "0.5"}}`},
		{"integers for floats", "name: a\ncpus: 2\nmem: 1.5e3\n", `{"name": "a", "cpus": 2, "mem": 1500}`},
		{"unicode", "name: a\nenvironment:\n  GREETING: \"h\\u00e9 \\U0001F600\"\n", `{"name": "a", "environment": {"GREETING": "hé \ud83d\ude00"}}`},
		{"a list", "- name: a\n- name: b\n  instances: 2\n", `[{"name": "a"}, {"name": "b", "instances": 2}]`},
		{"documents and a stream of objects", "name: a\n---\nname: b\n", `{"name": "a"} {"name": "b"}`},
		{"tabs in JSON", "name: a\ninstances: 2\n", "{\n\t\"name\":\t\"a\",\n\t\"instances\": 2\n}"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			y, j := mustParse(t, tc.yaml), mustParse(t, tc.json)
			if !reflect.DeepEqual(y, j) {
				t.Errorf("got YAML %+v and JSON %+v, want them equal", y, j)
			}
		})
	}
}

func TestParseMultipleManifests(t *testing.T) {
	names := func(ms []api.Manifest) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m.Name)
		}
		return out
	}
	cases := []struct {
		name, in string
		want     []string
	}{
		{"one", "name: a\n", []string{"a"}},
		{"documents", "name: a\n---\nname: b\n---\nname: c\n", []string{"a", "b", "c"}},
		{"leading, trailing and repeated separators", "---\nname: a\n---\n---\n# nothing here\n---\nname: b\n---\n", []string{"a", "b"}},
		{"documents with end markers", "name: a\n...\n---\nname: b\n...\n", []string{"a", "b"}},
		{"a YAML list", "- name: a\n- name: b\n", []string{"a", "b"}},
		{"lists in several documents", "- name: a\n---\n- name: b\n- name: c\n---\nname: d\n", []string{"a", "b", "c", "d"}},
		{"a JSON array", `[{"name": "a"}, {"name": "b"}]`, []string{"a", "b"}},
		{"a YAML flow mapping", "{name: a, instances: 2}", []string{"a"}},
		{"JSON with a trailing comma, read as YAML", `{"name": "a", "instances": 2,}`, []string{"a"}},
		{"a YAML flow list", "[{name: a}, {name: b}]", []string{"a", "b"}},
		{"a byte order mark", "\uFEFFname: a\n", []string{"a"}},
		{"anchors and merge keys", `
- &base
  name: a
  instances: 2
  inputs: [{stream: words, routing: group-by}]
- <<: *base
  name: b
`, []string{"a", "b"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := names(mustParse(t, tc.in)); !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParseMergeKeys(t *testing.T) {
	ms := mustParse(t, `
- &base {name: a, instances: 3, cpus: 1, environment: {A: "1"}}
- <<: [*base, {cpus: 2, mem: 64}]   # earlier mappings win
  name: b
- <<: *base
  name: c
  instances: 5                      # own keys win
  environment: {B: "2"}             # replaced, not merged
`)
	want := []api.Manifest{
		{Name: "a", Instances: 3, CPUs: 1, Environment: map[string]string{"A": "1"}},
		{Name: "b", Instances: 3, CPUs: 1, Mem: 64, Environment: map[string]string{"A": "1"}},
		{Name: "c", Instances: 5, CPUs: 1, Environment: map[string]string{"B": "2"}},
	}
	if !reflect.DeepEqual(ms, want) {
		t.Errorf("got %+v, want %+v", ms, want)
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name, in string
		want     []string
	}{
		{"empty", "", []string{"no manifest found: want a mapping of fields, several separated by ---, or a list of them"}},
		{"only comments", "# nothing\n---\n", []string{"no manifest found: want a mapping of fields, several separated by ---, or a list of them"}},
		{"unknown field", "name: a\ninstnaces: 2\n", []string{`line 2: unknown field "instnaces" (did you mean "instances"?)`}},
		{"unknown field in another case", "Name: a\n", []string{`line 1: unknown field "Name" (did you mean "name"?)`}},
		{"unknown field with no close match", "name: a\nreplicas: 2\n", []string{
			`line 2: unknown field "replicas": want one of name, kind, runtime, module, executable, instances, keyGroups, inputs, outputs, cpus, mem, disk, retries, environment, restart, watermarks, window or autoscale`}},
		{"unknown field in an input", "name: a\ninputs:\n  - stream: s\n    rooting: group-by\n", []string{
			`line 4: inputs[0]: unknown field "rooting" (did you mean "routing"?)`}},
		{"unknown field in restart", "name: a\nrestart:\n  window: 1m\n  maxRestart: 3\n", []string{
			`line 4: restart: unknown field "maxRestart" (did you mean "maxRestarts"?)`}},
		{"unknown field in restart with no close match", "name: a\nrestart:\n  backoff: 3s\n", []string{
			`line 3: restart: unknown field "backoff": want one of maxRestarts, window, initialBackoff, maxBackoff or deadLetterAfter`}},
		{"unknown field in JSON", "{\n  \"name\": \"a\",\n  \"instnaces\": 2\n}", []string{`line 3: unknown field "instnaces" (did you mean "instances"?)`}},
		{"several unknown fields", "nmae: a\ninstnaces: 2\n", []string{
			`line 1: unknown field "nmae" (did you mean "name"?)`, `line 2: unknown field "instnaces" (did you mean "instances"?)`}},
		{"field given twice", "name: a\ninstances: 1\ninstances: 2\n", []string{`line 3: "instances" is given twice (first on line 2)`}},
		{"field given twice in JSON", `{"name": "a", "name": "b"}`, []string{`line 1: "name" is given twice (first on line 1)`}},
		{"environment variable given twice", "name: a\nenvironment:\n  A: 1\n  A: 2\n", []string{`line 4: environment: "A" is given twice (first on line 3)`}},
		{"word for an integer", "name: a\ninstances: three\n", []string{`line 2: instances: want an integer, got "three"`}},
		{"fraction for an integer", "name: a\nkeyGroups: 1.5\n", []string{`line 2: keyGroups: want an integer, got "1.5"`}},
		{"fraction for an integer in JSON", `{"name": "a", "retries": 2.0}`, []string{`line 1: retries: want an integer, got "2.0"`}},
		{"quoted integer", "name: a\ninstances: \"3\"\n", []string{`line 2: instances: want an integer, got "3"`}},
		{"integer out of range", "name: a\nretries: 99999999999999999999\n", []string{`line 2: retries: want an integer, got "99999999999999999999"`}},
		{"integer out of range in JSON", `{"name": "a", "retries": 99999999999999999999}`, []string{`line 1: retries: integer 99999999999999999999 is out of range`}},
		{"word for a number", "name: a\ncpus: half\n", []string{`line 2: cpus: want a number, got "half"`}},
		{"explicit zero instances", "name: a\ninstances: 0\n", []string{
			"line 2: instances: must be ≥ 1, got 0 (leave instances out to use the kind's default)"}},
		{"explicit zero keyGroups", `{"name": "a", "keyGroups": 0}`, []string{
			"line 1: keyGroups: must be between 1 and 32768, got 0 (leave keyGroups out to use the kind's default, or 256)"}},
		{"string for a list", "name: a\noutputs: counts\n", []string{`line 2: outputs: want a list, got "counts"`}},
		{"mapping for a list", "name: a\ninputs:\n  stream: words\n", []string{`line 3: inputs: want a list, got a mapping`}},
		{"string for an input", "name: a\ninputs: [words]\n", []string{`line 2: inputs[0]: want a mapping of fields, got "words"`}},
		{"list for a string", "name: [a, b]\n", []string{`line 1: name: want a string, got a list`}},
		{"list for an environment value", "name: a\nenvironment:\n  A: [1]\n", []string{`line 3: environment.A: want a string, got a list`}},
		{"list for the environment", "name: a\nenvironment: [A=1]\n", []string{`line 2: environment: want a mapping of names to values, got a list`}},
		{"list as a key", "name: a\nenvironment:\n  ? [A]\n  : 1\n", []string{`line 3: environment: want a name as key, got a list`}},
		{"string for restart", "name: a\nrestart: always\n", []string{`line 2: restart: want a mapping of fields, got "always"`}},
		{"a scalar document", "hello\n", []string{`line 1: want a manifest (a mapping of fields such as name and instances), got "hello"`}},
		{"a list of lists", "- [name, a]\n", []string{`line 1: want a manifest (a mapping of fields such as name and instances), got a list`}},
		{"a null in a list", "- name: a\n-\n", []string{`line 2: want a manifest (a mapping of fields such as name and instances), got nothing`}},
		{"bad merge", "name: a\n<<: 3\n", []string{`line 2: <<: want a mapping or a list of mappings to merge, got "3"`}},
		{"problems in several documents", "name: a\ninstances: x\n---\nname: b\nretries: y\n", []string{
			`line 2: instances: want an integer, got "x"`, `line 5: retries: want an integer, got "y"`}},
		{"YAML syntax", "name: a\ninputs: [\n", []string{"line 2: bad YAML: did not find expected node content"}},
		{"YAML syntax after problems", "name: a\nretries: x\n---\nname: b\n  c: d\n", []string{
			`line 2: retries: want an integer, got "x"`, "line 5: bad YAML: mapping values are not allowed in this context"}},
		{"YAML indented with a tab", "name: a\n\tinstances: 2\n", []string{"line 2: bad YAML: found a tab character that violates indentation"}},
		{"YAML starting with a tab", "\tname: a\n", []string{
			"bad YAML: found character that cannot start any token (YAML does not allow tabs for indentation)"}},
		{"JSON syntax", "{\n  \"name\": \"a\"\n  \"instances\": 2\n}", []string{`line 3: bad JSON: invalid character '"' after object key:value pair`}},
		{"JSON cut short", "[{\"name\": \"a\"},\n", []string{"line 2: bad JSON: unexpected end of JSON input"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ms, err := Parse([]byte(tc.in))
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("got %+v, %v; want a *ParseError", ms, err)
			}
			if ms != nil {
				t.Errorf("got manifests %+v with the error, want none", ms)
			}
			if got := pe.Lines(); !slices.Equal(got, tc.want) {
				t.Errorf("got problems\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(tc.want, "\n\t"))
			}
		})
	}
}

func TestParseAliasBomb(t *testing.T) {
	// Each manifest merges the one before nine times: 9^12 mappings if
	// expanded.
	var b strings.Builder
	b.WriteString("- &a0 {name: a}\n")
	for i := 1; i <= 12; i++ {
		fmt.Fprintf(&b, "- &a%d {<<: [%s]}\n", i, strings.Repeat(fmt.Sprintf("*a%d, ", i-1), 8)+fmt.Sprintf("*a%d", i-1))
	}
	_, err := Parse([]byte(b.String()))
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("got %v, want a *ParseError", err)
	}
	if !strings.Contains(err.Error(), "too large") {
		t.Errorf("got %v, want a problem about size", err)
	}
}

func TestParseErrorMessage(t *testing.T) {
	_, err := Parse([]byte("name: a\ninstnaces: 2\n"))
	if got, want := err.Error(), `manifest: line 2: unknown field "instnaces" (did you mean "instances"?)`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	_, err = Parse([]byte("nmae: a\ninstnaces: 2\n"))
	if got, want := err.Error(), `manifest: 2 problems: line 1: unknown field "nmae" (did you mean "name"?); line 2: unknown field "instnaces" (did you mean "instances"?)`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestParseFile(t *testing.T) {
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good.yaml"), filepath.Join(dir, "bad.json")
	if err := os.WriteFile(good, []byte(fullYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(`{"name": "a", "instnaces": 2}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ms, err := ParseFile(good)
	if err != nil || !reflect.DeepEqual(ms, []api.Manifest{valid()}) {
		t.Errorf("got %+v, %v; want the full manifest", ms, err)
	}
	_, err = ParseFile(bad)
	var pe *ParseError
	if !errors.As(err, &pe) || pe.File != bad {
		t.Fatalf("got %v, want a *ParseError for %s", err, bad)
	}
	if got, want := err.Error(), "manifest: "+bad+`: line 1: unknown field "instnaces" (did you mean "instances"?)`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	_, err = ParseFile(filepath.Join(dir, "missing.yaml"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("got %v, want an error wrapping os.ErrNotExist", err)
	}
}
