package file_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/connectors/file"
	"github.com/sluicehq/sluice/sdk"
)

func TestSourceConfigErrorsNameTheField(t *testing.T) {
	ok := file.SourceConfig{Name: "read", Stream: "lines", Path: "in.txt"}
	cases := []struct {
		name  string
		edit  func(c *file.SourceConfig)
		field string
	}{
		{"no name", func(c *file.SourceConfig) { c.Name = "" }, "Name"},
		{"bad name", func(c *file.SourceConfig) { c.Name = "a b" }, "Name"},
		{"name ..", func(c *file.SourceConfig) { c.Name = ".." }, "Name"},
		{"stream .", func(c *file.SourceConfig) { c.Stream = "." }, "Stream"},
		{"no stream", func(c *file.SourceConfig) { c.Stream = "" }, "Stream"},
		{"no path", func(c *file.SourceConfig) { c.Path = "" }, "Path"},
		{"NUL in path", func(c *file.SourceConfig) { c.Path = "a\x00b" }, "Path"},
		{"parallelism", func(c *file.SourceConfig) { c.Parallelism = 2 }, "Parallelism"},
		{"negative batch", func(c *file.SourceConfig) { c.Batch = -1 }, "Batch"},
		{"negative max line", func(c *file.SourceConfig) { c.MaxLineSize = -1 }, "MaxLineSize"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := ok
			c.edit(&cfg)
			f, err := file.NewSource(cfg)
			checkConfigError(t, f, err, "source", c.field)
		})
	}
	for _, p := range []string{"in.txt", file.Stdio} {
		cfg := ok
		cfg.Path = p
		if _, err := file.NewSource(cfg); err != nil {
			t.Errorf("Path %q: %v", p, err)
		}
	}
}

func TestSinkConfigErrorsNameTheField(t *testing.T) {
	ok := file.SinkConfig{Name: "write", Stream: "lines", Path: "out.txt"}
	cases := []struct {
		name  string
		edit  func(c *file.SinkConfig)
		field string
	}{
		{"no name", func(c *file.SinkConfig) { c.Name = "" }, "Name"},
		{"no stream", func(c *file.SinkConfig) { c.Stream = "" }, "Stream"},
		{"bad stream", func(c *file.SinkConfig) { c.Stream = "a/b" }, "Stream"},
		{"name -rf", func(c *file.SinkConfig) { c.Name = "-rf" }, "Name"},
		{"stream ..", func(c *file.SinkConfig) { c.Stream = ".." }, "Stream"},
		{"bad routing", func(c *file.SinkConfig) { c.Routing = 42 }, "Routing"},
		{"no path", func(c *file.SinkConfig) { c.Path = "" }, "Path"},
		{"bad format", func(c *file.SinkConfig) { c.Format = 7 }, "Format"},
		{"negative parallelism", func(c *file.SinkConfig) { c.Parallelism = -1 }, "Parallelism"},
		{"negative buffer", func(c *file.SinkConfig) { c.BufferSize = -1 }, "BufferSize"},
		{"bad perm", func(c *file.SinkConfig) { c.Perm = 0o4755 | 1<<31 }, "Perm"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := ok
			c.edit(&cfg)
			f, err := file.NewSink(cfg)
			checkConfigError(t, f, err, "sink", c.field)
		})
	}
	cfg := ok
	cfg.Routing, cfg.Format, cfg.Parallelism = sdk.GroupBy, file.FormatKeyValue, 4
	if _, err := file.NewSink(cfg); err != nil {
		t.Error(err)
	}
}

func checkConfigError(t *testing.T, f sdk.Factory, err error, kind, field string) {
	t.Helper()
	if f != nil {
		t.Errorf("got a factory with the error %v", err)
	}
	var ce *file.ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("got error %v, want a *file.ConfigError", err)
	}
	if ce.Field != field || ce.Kind != kind {
		t.Fatalf("got Kind %q Field %q, want %q %q (%v)", ce.Kind, ce.Field, kind, field, err)
	}
	if want := "file " + kind; !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), field+": ") {
		t.Fatalf("got %q, want it to start with %q and name %s", err, want, field)
	}
}

func TestPathRequiredMessage(t *testing.T) {
	_, err := file.NewSource(file.SourceConfig{Name: "read", Stream: "lines"})
	want := `file source "read": Path: is required: give a file name, or "-" for stdin`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}

func TestParseFormat(t *testing.T) {
	cases := []struct {
		in   string
		want file.Format
		err  bool
	}{
		{"", file.FormatValue, false},
		{"value", file.FormatValue, false},
		{"Key-Value", file.FormatKeyValue, false},
		{"json", 0, true},
	}
	for _, c := range cases {
		got, err := file.ParseFormat(c.in)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("ParseFormat(%q) = %v, %v; want %v, error %v", c.in, got, err, c.want, c.err)
		}
		if err == nil && got.String() != strings.ToLower(c.in) && c.in != "" {
			t.Errorf("%v.String() = %q, want %q", got, got.String(), strings.ToLower(c.in))
		}
	}
}
