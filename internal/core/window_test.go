package core

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestWindowSpecProblems(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		name string
		w    WindowSpec
		want []string // fields, in order
	}{
		{"tumbling", WindowSpec{Type: WindowTumbling, Size: s, Lateness: s, Emit: EmitOnUpdate}, nil},
		{"hopping", WindowSpec{Type: WindowHopping, Size: 10 * s, Slide: s}, nil},
		{"session", WindowSpec{Type: WindowSession, Gap: s}, nil},
		{"count", WindowSpec{Type: WindowCount, Count: 3}, nil},
		{"global", WindowSpec{Type: WindowGlobal, Emit: EmitOnUpdate}, nil},
		{"unset", WindowSpec{}, []string{"type"}},
		{"unknown type", WindowSpec{Type: 9}, []string{"type"}},
		{"size 0", WindowSpec{Type: WindowTumbling}, []string{"size"}},
		{"size < 0", WindowSpec{Type: WindowHopping, Size: -s, Slide: s}, []string{"size"}},
		{"slide 0", WindowSpec{Type: WindowHopping, Size: s}, []string{"slide"}},
		{"slide > size", WindowSpec{Type: WindowHopping, Size: s, Slide: 2 * s}, []string{"slide"}},
		{"too many windows", WindowSpec{Type: WindowHopping, Size: time.Hour, Slide: time.Millisecond}, []string{"slide"}},
		{"gap 0", WindowSpec{Type: WindowSession}, []string{"gap"}},
		{"count < 0", WindowSpec{Type: WindowCount, Count: -1}, []string{"count"}},
		{"gap on tumbling", WindowSpec{Type: WindowTumbling, Size: s, Gap: s}, []string{"gap"}},
		{"slide on tumbling", WindowSpec{Type: WindowTumbling, Size: s, Slide: s}, []string{"slide"}},
		{"size on session", WindowSpec{Type: WindowSession, Gap: s, Size: s}, []string{"size"}},
		{"fields on global", WindowSpec{Type: WindowGlobal, Size: s, Slide: s, Gap: s, Count: 1}, []string{"size", "slide", "gap", "count"}},
		{"lateness < 0", WindowSpec{Type: WindowSession, Gap: s, Lateness: -s}, []string{"lateness"}},
		{"lateness on count", WindowSpec{Type: WindowCount, Count: 1, Lateness: s}, []string{"lateness"}},
		{"emit", WindowSpec{Type: WindowGlobal, Emit: 2}, []string{"emit"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, p := range tc.w.Problems() {
				got = append(got, p.Field)
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("got problems with %v, want %v (%v)", got, tc.want, tc.w.Problems())
			}
			err := Metadata{Name: "w", Window: &tc.w}.WithDefaults().Validate()
			var me *MetadataError
			switch {
			case tc.want == nil && err != nil:
				t.Fatalf("metadata: %v", err)
			case tc.want != nil && (!errors.As(err, &me) || me.Field != "window."+tc.want[0] || !strings.Contains(err.Error(), `operator "w": window.`+tc.want[0]+": ")):
				t.Fatalf("metadata: got %v, want a MetadataError for window.%s", err, tc.want[0])
			}
		})
	}
}

func TestWindowSpecJSON(t *testing.T) {
	w := WindowSpec{Type: WindowHopping, Size: time.Minute, Slide: 10 * time.Second, Lateness: time.Second, Emit: EmitOnUpdate}
	b, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"type":"hopping"`) || !strings.Contains(string(b), `"emit":"on-update"`) {
		t.Fatalf("encoded %s, want types and modes by name", b)
	}
	var got WindowSpec
	if err := json.Unmarshal(b, &got); err != nil || !got.Equal(&w) {
		t.Fatalf("decoded %+v (%v), want %+v", got, err, w)
	}
	if err := json.Unmarshal([]byte(`{"type":"sliding"}`), &got); err == nil {
		t.Fatal("an unknown type decoded")
	}
}
