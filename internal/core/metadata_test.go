package core

import (
	"errors"
	"net/url"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestValidName(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want string // a part of the error, "" for valid
	}{
		{"letters", "count", ""},
		{"every allowed character", "aZ09-_.", ""},
		{"starts with a digit", "9lives", ""},
		{"dots inside", "a..b", ""},
		{"dead-letter stream", "count.deadletter", ""},
		{"longest", strings.Repeat("a", 200), ""},
		{"empty", "", "must not be empty"},
		{"too long", strings.Repeat("a", 201), "at most 200 characters, got 201"},
		{"dot", ".", `starts with '.'`},
		{"dot dot", "..", `starts with '.'`},
		{"three dots", "...", `starts with '.'`},
		{"hidden file", ".count", `starts with '.'`},
		{"flag", "-rf", `starts with '-'`},
		{"underscore first", "_x", `starts with '_'`},
		{"slash", "a/b", `has '/'`},
		{"parent path", "../x", `has '/'`},
		{"percent", "%2e%2e", `has '%'`},
		{"backslash", `a\b`, `has '\\'`},
		{"space", "a b", `has ' '`},
		{"non-ASCII", "zähler", `has 'ä'`},
		{"NUL", "a\x00", `has '\x00'`},
		{"the first problem is the character", "./x", `has '/'`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidName(tc.in)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("ValidName(%q) = %v, want nil", tc.in, err)
			case tc.want != "" && err == nil:
				t.Errorf("ValidName(%q) = nil, want an error containing %q", tc.in, tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Errorf("ValidName(%q) = %q, want it to contain %q", tc.in, err, tc.want)
			}
		})
	}
}

// TestValidNamesArePathSafe checks every name of up to three characters
// from an alphabet holding each allowed kind of character and some others:
// whatever ValidName accepts must be safe as a URL path segment, a file
// name and a command-line argument.
func TestValidNamesArePathSafe(t *testing.T) {
	alphabet := []string{"a", "Z", "0", "-", "_", ".", "/", "%", " ", "\\", "~"}
	var names []string
	var grow func(prefix string, n int)
	grow = func(prefix string, n int) {
		names = append(names, prefix)
		if n == 0 {
			return
		}
		for _, c := range alphabet {
			grow(prefix+c, n-1)
		}
	}
	grow("", 3)
	accepted := 0
	for _, n := range names {
		if ValidName(n) != nil {
			continue
		}
		accepted++
		if p := pathSafetyProblem(n); p != "" {
			t.Errorf("ValidName accepts %q, which %s", n, p)
		}
	}
	if accepted == 0 {
		t.Fatal("no name was accepted: the test checks nothing")
	}
}

// pathSafetyProblem says why name is unsafe as a URL path segment, a file
// name or a command-line argument, or returns "".
func pathSafetyProblem(name string) string {
	switch {
	case url.PathEscape(name) != name:
		return "needs escaping in a URL path (" + url.PathEscape(name) + ")"
	case path.Clean("/v1/operators/"+name) != "/v1/operators/"+name:
		return "a URL path resolves to " + path.Clean("/v1/operators/"+name)
	case filepath.Base(filepath.Join("launched", name)) != name || filepath.Dir(filepath.Join("launched", name)) != "launched":
		return "is not a file name of its own in a directory"
	case strings.HasPrefix(name, "-"):
		return "would be taken for a flag"
	case strings.HasPrefix(name, "."):
		return "is a hidden file"
	}
	return ""
}

func TestMetadataValidateNames(t *testing.T) {
	cases := []struct {
		name  string
		meta  Metadata
		field string
	}{
		{"operator named ..", Metadata{Name: ".."}, "name"},
		{"operator named .", Metadata{Name: "."}, "name"},
		{"input stream ..", Metadata{Name: "a", Inputs: []Input{{Stream: ".."}}}, "inputs[0].stream"},
		{"output stream .x", Metadata{Name: "a", Outputs: []string{"ok", ".x"}}, "outputs[1]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.meta.WithDefaults().Validate()
			var me *MetadataError
			if !errors.As(err, &me) || me.Field != tc.field {
				t.Fatalf("got %v, want a MetadataError on %s", err, tc.field)
			}
		})
	}
}

func TestValidateWatermarkStrategy(t *testing.T) {
	cases := []struct {
		name  string
		w     WatermarkStrategy
		field string // "" for valid
	}{
		{"monotonic", WatermarkStrategy{}, ""},
		{"bounded with idleness", WatermarkStrategy{OutOfOrderness: time.Second, Idleness: time.Minute}, ""},
		{"negative out-of-orderness", WatermarkStrategy{OutOfOrderness: -1}, "watermarks.outOfOrderness"},
		{"negative idleness", WatermarkStrategy{Idleness: -time.Second}, "watermarks.idleness"},
		{"negative interval", WatermarkStrategy{Interval: -time.Millisecond}, "watermarks.interval"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := tc.w
			m := Metadata{Name: "src", Outputs: []string{"out"}, Watermarks: &w}.WithDefaults()
			err := m.Validate()
			var me *MetadataError
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("Validate = %v, want nil", err)
			case tc.field == "":
				if m.Watermarks.Interval != DefaultWatermarkInterval {
					t.Fatalf("interval after WithDefaults = %v, want %v", m.Watermarks.Interval, DefaultWatermarkInterval)
				}
			case !errors.As(err, &me) || me.Field != tc.field || me.Operator != "src":
				t.Fatalf("Validate = %v, want a MetadataError for operator src, field %s", err, tc.field)
			}
		})
	}
	if w := (&WatermarkStrategy{Idleness: time.Second}); !w.Equal(&WatermarkStrategy{Idleness: time.Second}) || w.Equal(nil) {
		t.Fatal("WatermarkStrategy.Equal compares the wrong things")
	}
}

// TestValidateAutoscale: each bad setting is refused naming its field
// under autoscale.
func TestValidateAutoscale(t *testing.T) {
	cases := []struct {
		name  string
		a     AutoscaleSpec
		field string // "" for valid
	}{
		{"defaults", AutoscaleSpec{}, ""},
		{"every field", AutoscaleSpec{Min: 2, Max: 8, TargetUtilization: 0.5, ScaleDownAfter: time.Minute, CoolDown: time.Second, DryRun: true}, ""},
		{"max at the key groups", AutoscaleSpec{Max: 16}, ""},
		{"negative min", AutoscaleSpec{Min: -1}, "autoscale.min"},
		{"negative max", AutoscaleSpec{Max: -1}, "autoscale.max"},
		{"max above the key groups", AutoscaleSpec{Max: 17}, "autoscale.max"},
		{"min above the key groups", AutoscaleSpec{Min: 17}, "autoscale.min"},
		{"min above max", AutoscaleSpec{Min: 4, Max: 3}, "autoscale.min"},
		{"target above 1", AutoscaleSpec{TargetUtilization: 1.01}, "autoscale.targetUtilization"},
		{"negative target", AutoscaleSpec{TargetUtilization: -0.1}, "autoscale.targetUtilization"},
		{"negative scaleDownAfter", AutoscaleSpec{ScaleDownAfter: -time.Second}, "autoscale.scaleDownAfter"},
		{"negative coolDown", AutoscaleSpec{CoolDown: -time.Second}, "autoscale.coolDown"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.a
			m := Metadata{Name: "count", KeyGroups: 16, Autoscale: &a}.WithDefaults()
			err := m.Validate()
			var me *MetadataError
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("Validate = %v, want nil", err)
			case tc.field != "" && (!errors.As(err, &me) || me.Field != tc.field || me.Operator != "count"):
				t.Fatalf("Validate = %v, want a MetadataError for operator count, field %s", err, tc.field)
			}
		})
	}
	d := AutoscaleSpec{}.WithDefaults(64)
	if d.Min != 1 || d.Max != 64 || d.TargetUtilization != DefaultTargetUtilization || d.ScaleDownAfter != DefaultScaleDownAfter || d.CoolDown != DefaultCoolDown {
		t.Fatalf("defaults: %+v", d)
	}
}
