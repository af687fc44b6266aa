package node

import (
	"runtime/debug"
	"testing"

	"github.com/sluicehq/sluice/cluster"
)

// TestVersionOf: a node announces a version for every kind of build, and
// the membership accepts it (status showed VERSION - for every node).
func TestVersionOf(t *testing.T) {
	for _, c := range []struct {
		info debug.BuildInfo
		want string
	}{
		{debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}}, "v1.4.0"},
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "false"}}}, "devel+0123456789ab"},
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}}, "devel+0123456789ab-dirty"},
		{debug.BuildInfo{}, "devel"},
	} {
		got := versionOf(&c.info)
		if got != c.want {
			t.Errorf("versionOf(%+v) = %q, want %q", c.info.Main, got, c.want)
		}
		m := cluster.Member{ID: "n1", Address: "127.0.0.1:1", Version: got}
		if err := m.Validate(); err != nil {
			t.Errorf("the membership refuses version %q: %v", got, err)
		}
	}
	if BuildVersion() == "" {
		t.Fatal("BuildVersion is empty")
	}
}
