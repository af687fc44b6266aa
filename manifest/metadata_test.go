package manifest

import (
	"reflect"
	"testing"
	"time"

	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/internal/core"
)

func TestMetadata(t *testing.T) {
	kind := core.Metadata{
		Name:        "counter",
		Inputs:      []core.Input{{Stream: "words", Routing: core.GroupBy}},
		Outputs:     []string{"counts"},
		Parallelism: 4,
		KeyGroups:   64,
		Restart:     core.RestartPolicy{MaxRestarts: 3, Window: time.Hour},
	}
	defaults := core.Metadata{}.WithDefaults()
	cases := []struct {
		name string
		m    api.Manifest
		base core.Metadata
		want core.Metadata
	}{
		{"only a name, unknown kind", api.Manifest{Name: "a"}, core.Metadata{},
			core.Metadata{Name: "a", Inputs: []core.Input{}, Parallelism: 1, KeyGroups: 256, Restart: defaults.Restart}},
		{"only a name, known kind", api.Manifest{Name: "count"}, kind,
			core.Metadata{Name: "count", Inputs: kind.Inputs, Outputs: kind.Outputs, Parallelism: 4, KeyGroups: 64,
				Restart: core.RestartPolicy{MaxRestarts: 3, Window: time.Hour}.WithDefaults()}},
		{"every field", valid(), kind,
			core.Metadata{Name: "count", Inputs: []core.Input{{Stream: "words", Routing: core.GroupBy}, {Stream: "ticks", Routing: core.Shuffle}},
				Outputs: []string{"counts", "stats"}, Parallelism: 4, KeyGroups: 256,
				Restart: core.RestartPolicy{MaxRestarts: 10, Window: time.Minute, InitialBackoff: 10 * time.Millisecond, MaxBackoff: 5 * time.Second, DeadLetterAfter: 3}}},
		{"a restart block keeps what it does not set", api.Manifest{Name: "count", Restart: &api.ManifestRestart{Window: "2m"}}, kind,
			core.Metadata{Name: "count", Inputs: kind.Inputs, Outputs: kind.Outputs, Parallelism: 4, KeyGroups: 64,
				Restart: core.RestartPolicy{MaxRestarts: 3, Window: 2 * time.Minute}.WithDefaults()}},
		{"watermarks", api.Manifest{Name: "count", Watermarks: &api.ManifestWatermarks{OutOfOrderness: "2s", Idleness: "1m"}}, kind,
			core.Metadata{Name: "count", Inputs: kind.Inputs, Outputs: kind.Outputs, Parallelism: 4, KeyGroups: 64,
				Restart:    core.RestartPolicy{MaxRestarts: 3, Window: time.Hour}.WithDefaults(),
				Watermarks: &core.WatermarkStrategy{OutOfOrderness: 2 * time.Second, Idleness: time.Minute, Interval: core.DefaultWatermarkInterval}}},
		{"autoscale", api.Manifest{Name: "count", Autoscale: &api.ManifestAutoscale{Max: 8, TargetUtilization: 0.5, ScaleDownAfter: "2m", DryRun: true}}, kind,
			core.Metadata{Name: "count", Inputs: kind.Inputs, Outputs: kind.Outputs, Parallelism: 4, KeyGroups: 64,
				Restart:   core.RestartPolicy{MaxRestarts: 3, Window: time.Hour}.WithDefaults(),
				Autoscale: &core.AutoscaleSpec{Max: 8, TargetUtilization: 0.5, ScaleDownAfter: 2 * time.Minute, DryRun: true}}},
		{"outputs replace the kind's", api.Manifest{Name: "count", Outputs: []string{"x"}, Inputs: []api.ManifestInput{{Stream: "y", Routing: "broadcast"}}}, kind,
			core.Metadata{Name: "count", Inputs: []core.Input{{Stream: "y", Routing: core.Broadcast}}, Outputs: []string{"x"}, Parallelism: 4, KeyGroups: 64,
				Restart: core.RestartPolicy{MaxRestarts: 3, Window: time.Hour}.WithDefaults()}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Metadata(tc.m, tc.base)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
	win := kind
	win.Window = &core.WindowSpec{Type: core.WindowTumbling, Size: 10 * time.Second, Lateness: time.Second}
	for _, tc := range []struct {
		name string
		w    *api.ManifestWindow
		base core.Metadata
		want *core.WindowSpec
	}{
		{"no window mapping keeps the kind's", nil, win, win.Window},
		{"fields change the kind's", &api.ManifestWindow{Size: "1s", Emit: "on-update"}, win,
			&core.WindowSpec{Type: core.WindowTumbling, Size: time.Second, Lateness: time.Second, Emit: core.EmitOnUpdate}},
		{"lateness 0s clears the kind's", &api.ManifestWindow{Lateness: "0s"}, win,
			&core.WindowSpec{Type: core.WindowTumbling, Size: 10 * time.Second}},
		{"a type replaces the kind's whole", &api.ManifestWindow{Type: "session", Gap: "5s"}, win,
			&core.WindowSpec{Type: core.WindowSession, Gap: 5 * time.Second}},
		{"unknown kind", &api.ManifestWindow{Type: "count", Count: 7}, core.Metadata{}, &core.WindowSpec{Type: core.WindowCount, Count: 7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Metadata(api.Manifest{Name: "count", Window: tc.w}, tc.base).Window
			if !got.Equal(tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			if got == tc.base.Window {
				t.Error("Metadata shares its window with base")
			}
		})
	}
	got := Metadata(api.Manifest{Name: "count"}, kind)
	got.Inputs[0].Stream, got.Outputs[0] = "changed", "changed"
	if kind.Inputs[0].Stream != "words" || kind.Outputs[0] != "counts" {
		t.Error("Metadata shares its slices with base")
	}
}
