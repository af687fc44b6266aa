package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

var fuzzSeeds = []string{
	fullYAML,
	fullJSON,
	"",
	"name: a\n---\nname: b\n",
	"- name: a\n- name: b\n  instances: 2\n",
	`[{"name": "a"}, {"name": "b", "environment": {"A": "x\u0000"}}]`,
	"{name: a, instances: 2}",
	"- &b {name: a, cpus: .nan}\n- <<: *b\n  name: b\n",
	"name: a\ninstnaces: 2\nkeyGroups: 1.5\n",
	"name: a\nrestart:\n  window: 5 minutes\n",
	"name: a\nexecutable: file:///x\nenvironment: {\"\": 1}\n",
	"name: \"\\u2028\\x85\"\nexecutable: \"/\\t\"\n",
	"{\"name\": \"a\", \"mem\": 1e400}",
}

// FuzzParse checks that Parse never panics, fails only with a *ParseError
// (never suggesting an empty field name), and that whatever it accepts and Validate passes encodes to YAML and to
// JSON and parses back to the same manifests.
func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, err := Parse(data)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || len(pe.Problems) == 0 {
				t.Fatalf("got error %#v, want a *ParseError with problems", err)
			}
			if strings.Contains(err.Error(), `did you mean ""`) {
				t.Fatalf("an empty suggestion: %v", err)
			}
			return
		}
		if len(ms) == 0 {
			t.Fatal("got no manifests and no error")
		}
		for _, m := range ms {
			if Validate(m) != nil {
				return
			}
		}

		var y bytes.Buffer
		enc := yaml.NewEncoder(&y)
		for _, m := range ms {
			if err := enc.Encode(m); err != nil {
				t.Fatalf("encode %+v as YAML: %v", m, err)
			}
		}
		if err := enc.Close(); err != nil {
			t.Fatal(err)
		}
		again, err := Parse(y.Bytes())
		if err != nil || !reflect.DeepEqual(again, ms) {
			t.Fatalf("YAML round trip of %q:\n%s\ngot %+v, %v\nwant %+v", data, y.Bytes(), again, err, ms)
		}

		j, err := json.Marshal(ms)
		if err != nil {
			t.Fatalf("encode %+v as JSON: %v", ms, err)
		}
		again, err = Parse(j)
		if err != nil || !reflect.DeepEqual(again, ms) {
			t.Fatalf("JSON round trip of %q:\n%s\ngot %+v, %v\nwant %+v", data, j, again, err, ms)
		}
	})
}
