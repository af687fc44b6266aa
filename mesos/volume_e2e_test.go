package mesos_test

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/mesos"
	"github.com/sluicehq/sluice/mesos/mesostest"
)

// TestVolumeKeepsNodeData runs a node pool with a persistent volume: the
// node keeps its Pebble data on a volume reserved and created on its
// agent; when the node crashes it is relaunched on the same agent with the
// same volume, so the new node opens the same data directory. Scaled to
// zero, the volume is destroyed and its disk unreserved.
func TestVolumeKeepsNodeData(t *testing.T) {
	e := newEnv(t, mesostest.AgentSpec{ID: "agent-1", CPUs: 2, Mem: 2048, Disk: 1024},
		mesostest.AgentSpec{ID: "agent-2", CPUs: 2, Mem: 2048, Disk: 1024})
	cfg := e.config("s1")
	cfg.Roles, cfg.Principal = []string{"sluice"}, "sluice"
	p := nodePool("count", 1)
	p.Volume = &mesos.VolumeSpec{Size: 64}
	s := e.start(cfg, p)
	e.waitMaster(waitTimeout, "the node running", func() bool { return len(e.running()) == 1 })
	e.waitMembersAreTasks()
	first := slices.Collect(maps.Values(e.running()))[0]
	if len(first.Volumes) != 1 {
		t.Fatalf("task %s uses volumes %v, want one", first.ID, first.Volumes)
	}
	var vol mesostest.Volume
	for _, a := range e.master.Agents() {
		for _, v := range a.Volumes {
			if v.ID == first.Volumes[0] {
				vol = v
			}
		}
	}
	if vol.ID == "" || vol.Role != "sluice" || vol.Size != 64 || vol.ContainerPath != "data" {
		t.Fatalf("volume %+v on the agents", vol)
	}
	dataDir := func(tk mesostest.Task) string {
		d, err := filepath.EvalSymlinks(filepath.Join(tk.Sandbox, "data"))
		if err != nil {
			t.Fatalf("data dir of %s: %v", tk.ID, err)
		}
		return d
	}
	volDir, _ := filepath.EvalSymlinks(vol.Dir)
	if d := dataDir(first); d != volDir {
		t.Fatalf("the node's data dir is %s, want the volume %s", d, volDir)
	}
	pebbleFiles := func(dir string) []string {
		m, _ := filepath.Glob(filepath.Join(dir, "MANIFEST-*"))
		return m
	}
	sluicetest.WaitFor(t, waitTimeout, "Pebble data on the volume", func() bool { return len(pebbleFiles(volDir)) > 0 })
	marker := filepath.Join(volDir, "written-by-"+first.ID)
	if err := os.WriteFile(marker, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}

	if err := e.master.KillTaskProcess(first.ID); err != nil {
		t.Fatal(err)
	}
	var second mesostest.Task
	e.waitMaster(waitTimeout, "the node relaunched", func() bool {
		for id, tk := range e.running() {
			if id != first.ID {
				second = tk
				return true
			}
		}
		return false
	})
	e.waitMembersAreTasks()
	if second.AgentID != first.AgentID || !slices.Equal(second.Volumes, first.Volumes) {
		t.Fatalf("relaunched on %s with volumes %v, want %s with %v", second.AgentID, second.Volumes, first.AgentID, first.Volumes)
	}
	if d := dataDir(second); d != volDir {
		t.Fatalf("the new node's data dir is %s, want the volume %s", d, volDir)
	}
	if _, err := os.Stat(filepath.Join(dataDir(second), filepath.Base(marker))); err != nil {
		t.Errorf("the relaunched node's data dir lacks what was written before: %v", err)
	}
	if len(pebbleFiles(dataDir(second))) == 0 {
		t.Error("the relaunched node's data dir has no Pebble database")
	}
	if st := s.Status(); st.Tasks[0].Volume != vol.ID {
		t.Errorf("status shows volume %q, want %s", st.Tasks[0].Volume, vol.ID)
	}

	// Scaled to zero: the volume goes, the disk is unreserved.
	p.Instances = 0
	if err := s.SetPools([]mesos.Pool{p}); err != nil {
		t.Fatal(err)
	}
	e.waitMaster(waitTimeout, "the volume destroyed, its disk unreserved", func() bool {
		for _, a := range e.master.Agents() {
			if a.ID == first.AgentID {
				return len(a.Volumes) == 0 && a.Total.Disk == 1024 && e.master.RunningProcesses() == 0
			}
		}
		return false
	})
	if _, err := os.Stat(volDir); !os.IsNotExist(err) {
		t.Errorf("volume directory after DESTROY: %v", err)
	}
}
