package window_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/window"
)

func TestConfigErrorsNameTheField(t *testing.T) {
	ok := window.Config{Name: "w", Input: "in", Output: "out", Windows: window.Tumbling(time.Second)}
	for _, tc := range []struct {
		name  string
		edit  func(*window.Config)
		field string
	}{
		{"size 0", func(c *window.Config) { c.Windows = window.Tumbling(0) }, "windows.size"},
		{"size < 0", func(c *window.Config) { c.Windows = window.Tumbling(-time.Second) }, "windows.size"},
		{"hopping size 0", func(c *window.Config) { c.Windows = window.Hopping(0, time.Second) }, "windows.size"},
		{"slide 0", func(c *window.Config) { c.Windows = window.Hopping(time.Second, 0) }, "windows.slide"},
		{"slide > size", func(c *window.Config) { c.Windows = window.Hopping(time.Second, 2*time.Second) }, "windows.slide"},
		{"too many windows", func(c *window.Config) { c.Windows = window.Hopping(time.Hour, time.Millisecond) }, "windows.slide"},
		{"gap 0", func(c *window.Config) { c.Windows = window.Session(0) }, "windows.gap"},
		{"count 0", func(c *window.Config) { c.Windows = window.CountOf(0) }, "windows.count"},
		{"count < 0", func(c *window.Config) { c.Windows = window.CountOf(-3) }, "windows.count"},
		{"unset", func(c *window.Config) { c.Windows = window.Windows{} }, "windows"},
		{"lateness < 0", func(c *window.Config) { c.Lateness = -time.Second }, "lateness"},
		{"lateness on counts", func(c *window.Config) { c.Windows, c.Lateness = window.CountOf(2), time.Second }, "lateness"},
		{"emit", func(c *window.Config) { c.Emit = 7 }, "emit"},
		{"name", func(c *window.Config) { c.Name = "" }, "name"},
		{"input", func(c *window.Config) { c.Input = "-x" }, "input"},
		{"output", func(c *window.Config) { c.Output = "a b" }, "output"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			_, err := window.New(c, window.Count())
			var ce *window.ConfigError
			if !errors.As(err, &ce) || ce.Field != tc.field {
				t.Fatalf("got %v, want a ConfigError for %s", err, tc.field)
			}
			if !strings.Contains(err.Error(), `window operator "`+c.Name+`"`) || !strings.Contains(err.Error(), tc.field+":") {
				t.Fatalf("error %q does not name the operator and the field", err)
			}
		})
	}
	c := ok
	c.Parallelism, c.KeyGroups = 8, 4
	var me *sdk.MetadataError
	if _, err := window.New(c, window.Count()); !errors.As(err, &me) || me.Field != "parallelism" {
		t.Fatalf("parallelism > keyGroups: got %v", err)
	}
	if _, err := window.New(ok, window.Aggregator[int64](nil)); err == nil {
		t.Fatal("a nil aggregator was accepted")
	}
}

// The operator declares its windows (Metadata.Window), which a manifest
// may change, and its late stream whatever they are, so that a manifest
// may change them to event-time windows.
func TestMetadataDeclaresTheWindows(t *testing.T) {
	for _, tc := range []struct {
		cfg  window.Config
		want sdk.WindowSpec
	}{
		{window.Config{Windows: window.Hopping(time.Minute, 10*time.Second), Lateness: time.Second, Emit: window.OnUpdate},
			sdk.WindowSpec{Type: core.WindowHopping, Size: time.Minute, Slide: 10 * time.Second, Lateness: time.Second, Emit: core.EmitOnUpdate}},
		{window.Config{Windows: window.CountOf(5)}, sdk.WindowSpec{Type: core.WindowCount, Count: 5}},
	} {
		tc.cfg.Name, tc.cfg.Input, tc.cfg.Output = "w", "in", "out"
		f, err := window.New(tc.cfg, window.Count())
		if err != nil {
			t.Fatal(err)
		}
		m := f().Metadata()
		if !m.Window.Equal(&tc.want) || !slices.Equal(m.Outputs, []string{"out", window.LateStream("w")}) {
			t.Errorf("%v: metadata window %v, outputs %v; want %v and [out w.late]", tc.cfg.Windows, m.Window, m.Outputs, tc.want)
		}
	}
}
