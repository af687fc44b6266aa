package manifest

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/control/api"
)

func TestUnknownFieldHint(t *testing.T) {
	all := ": want one of name, kind, runtime, module, executable, instances, keyGroups, inputs, outputs, cpus, mem, disk, retries, environment, restart, watermarks, window or autoscale"
	cases := []struct {
		key  string
		want string
	}{
		{"x", all},
		{"n", all},
		{"N", all},
		{"", all},
		{"me", all},
		{"ab", all},
		{"zzzzzzzz", all},
		{"kindness", all},
		{"NAME", ` (did you mean "name"?)`},
		{"Name", ` (did you mean "name"?)`},
		{"cpu", ` (did you mean "cpus"?)`},
		{"kin", ` (did you mean "kind"?)`},
		{"nmae", ` (did you mean "name"?)`},
		{"instnaces", ` (did you mean "instances"?)`},
		{"keygroup", ` (did you mean "keyGroups"?)`},
		{"environmnt", ` (did you mean "environment"?)`},
		{"outptus", ` (did you mean "outputs"?)`},
	}
	fields := fieldsOf(reflect.TypeOf(api.Manifest{}))
	for _, tc := range cases {
		t.Run(strconv.Quote(tc.key), func(t *testing.T) {
			if got := fields.hint(tc.key); got != tc.want {
				t.Errorf("hint(%q) = %q, want %q", tc.key, got, tc.want)
			}
		})
	}
}

// TestShortUnknownFieldsGetNoEmptyHint parses every one- and two-letter
// unknown field, at the top and in a nested mapping: none may be answered
// with an empty suggestion.
func TestShortUnknownFieldsGetNoEmptyHint(t *testing.T) {
	letters := "abcdefghijklmnopqrstuvwxyzAZ_0"
	var keys []string
	for _, a := range letters {
		keys = append(keys, string(a))
		for _, b := range letters {
			keys = append(keys, string(a)+string(b))
		}
	}
	checked := 0
	for _, k := range keys {
		for _, doc := range []string{"name: a\n" + k + ": 1\n", "name: a\nrestart:\n  " + k + ": 1\n", "name: a\ninputs:\n  - stream: s\n    " + k + ": 1\n"} {
			_, err := Parse([]byte(doc))
			if err == nil {
				continue // a real field, such as "mem"
			}
			checked++
			if msg := err.Error(); strings.Contains(msg, `did you mean ""`) || !strings.Contains(msg, "unknown field") {
				t.Errorf("Parse(%q): %s", doc, msg)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no unknown field was parsed: the test checks nothing")
	}
}
