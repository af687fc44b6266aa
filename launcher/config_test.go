package launcher_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/cluster"
	"github.com/sluicehq/sluice/launcher"
)

func TestConfigValidateNamesTheField(t *testing.T) {
	members := func(context.Context) ([]cluster.Member, error) { return nil, nil }
	good := launcher.Config{Node: "n1", DataDir: t.TempDir(), Store: &memStore{}, Members: members, Policy: launcher.Policy{SlugDir: t.TempDir()}}
	if err := good.Validate(); err != nil {
		t.Fatalf("a complete config: got %v, want no error", err)
	}
	for _, tc := range []struct {
		name  string
		edit  func(*launcher.Config)
		field string
	}{
		{"no node", func(c *launcher.Config) { c.Node = "" }, "Config.Node"},
		{"no data dir", func(c *launcher.Config) { c.DataDir = "" }, "Config.DataDir"},
		{"no store", func(c *launcher.Config) { c.Store = nil }, "Config.Store"},
		{"negative interval", func(c *launcher.Config) { c.Interval = -time.Second }, "Config.Interval"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			tc.edit(&c)
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("got %v, want an error naming %s", err, tc.field)
			}
			if _, err := launcher.New(c); err == nil {
				t.Fatalf("New accepted the config that Validate refuses")
			}
		})
	}
}
