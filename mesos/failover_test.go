package mesos_test

import (
	"bufio"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/proctest"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/mesos"
	"github.com/sluicehq/sluice/mesos/mesosstatus"
)

// TestRestartResubscribes stops the scheduler (it steps down without
// tearing down the framework) and starts another: it resubscribes with the
// framework ID from Consul and adopts the running tasks without launching
// any. Then scaling down kills tasks for good.
func TestRestartResubscribes(t *testing.T) {
	e := newEnv(t, twoAgents()...)
	peak := e.watchProcesses()
	pools := []mesos.Pool{shellPool("p", 3, "sleep 600", 3)}
	s1 := e.start(e.config("s1"), pools...)
	e.waitMaster(waitTimeout, "3 running tasks", func() bool { return len(e.running()) == 3 })
	fid := s1.Status().FrameworkID
	before := slices.Sorted(maps.Keys(e.running()))

	s1.stop(t)
	e.waitMaster(10*time.Second, "the framework disconnected", func() bool {
		fw := e.master.Frameworks()
		return len(fw) == 1 && !fw[0].Connected && !fw[0].Removed
	})
	if st, err := e.readStatus(); err != nil || st.Role != mesosstatus.RoleStopped {
		t.Errorf("status after the leader stopped: %+v, %v", st.Role, err)
	}
	if n := e.master.RunningProcesses(); n != 3 {
		t.Fatalf("%d processes after the scheduler stopped, want 3 (no teardown)", n)
	}

	s2 := e.start(e.config("s2"), pools...)
	sluicetest.WaitEvery(t, waitTimeout, 20*time.Millisecond, "s2 leading with the tasks confirmed", func() bool {
		st := s2.Status()
		if st.Subscription.State != mesosstatus.Subscribed || len(st.Pools) != 1 || st.Pools[0].Running != 3 {
			return false
		}
		for _, ts := range st.Tasks {
			if ts.Unconfirmed {
				return false
			}
		}
		return true
	})
	if got := s2.Status().FrameworkID; got != fid {
		t.Errorf("framework ID %q after restart, want %q", got, fid)
	}
	if fw := e.master.Frameworks(); len(fw) != 1 || !fw[0].Connected {
		t.Errorf("frameworks = %+v, want the one, connected", fw)
	}
	if got := slices.Sorted(maps.Keys(e.running())); !slices.Equal(got, before) || len(e.master.Tasks()) != 3 {
		t.Errorf("tasks after restart %v (of %d launched), want %v and no launch", got, len(e.master.Tasks()), before)
	}

	// Scale down: the killed tasks are not relaunched.
	if err := s2.SetPools([]mesos.Pool{shellPool("p", 1, "sleep 600", 3)}); err != nil {
		t.Fatal(err)
	}
	e.waitMaster(waitTimeout, "1 running task", func() bool { return len(e.running()) == 1 && e.master.RunningProcesses() == 1 })
	sluicetest.WaitEvery(t, 10*time.Second, 20*time.Millisecond, "the pool scaled down", func() bool {
		st := s2.Status()
		return len(st.Tasks) == 1 && st.Pools[0].Running == 1 && st.Pools[0].Killing == 0
	})
	killed := 0
	for _, tk := range e.master.Tasks() {
		if tk.State.String() == "TASK_KILLED" {
			killed++
		}
	}
	if killed != 2 || len(e.master.Tasks()) != 3 || s2.Status().Pools[0].Restarts != 0 {
		t.Errorf("%d killed of %d tasks, restarts %d; want 2 killed, nothing relaunched", killed, len(e.master.Tasks()), s2.Status().Pools[0].Restarts)
	}
	// Removing the pool kills the rest.
	if err := s2.SetPools(nil); err != nil {
		t.Fatal(err)
	}
	e.waitMaster(waitTimeout, "no task process", func() bool { return e.master.RunningProcesses() == 0 })
	if p := peak(); p > 3 {
		t.Errorf("peak of %d task processes, want at most 3", p)
	}
}

// proc is a sluice-mesos process.
type proc struct {
	id  string
	svc *proctest.Service
	log string
}

// startProc runs sluice-mesos with the env's master and Consul; the
// process is killed when the test ends.
func (e *env) startProc(id, poolsFile string) *proc {
	e.t.Helper()
	p := &proc{id: id, log: filepath.Join(e.t.TempDir(), id+".log")}
	cmd := exec.Command(schedBinary,
		"--master", e.master.URL(), "--consul", e.consul.Addr(), "--cluster", e.cluster, "--id", id,
		"--pools", poolsFile, "--node-binary", nodeBinary, "--http", "127.0.0.1:0", "--log-level", "debug",
		"--failover-timeout", "60s", "--session-ttl", "10s", "--lock-delay", "5s", "--kill-grace", "5s",
		"--relaunch-backoff-min", "200ms", "--relaunch-backoff-max", "1s",
		"--subscribe-backoff-min", "100ms", "--subscribe-backoff-max", "1s",
		"--reconcile-retry", "3s", "--decline-refuse", "1s", "--status-interval", "1s")
	svc, err := proctest.Spawn(cmd, p.log)
	if err != nil {
		e.t.Fatal(err)
	}
	p.svc = svc
	e.t.Cleanup(func() {
		svc.Kill()
		if e.t.Failed() {
			e.t.Logf("%s log tail:\n%s", id, proctest.LogTail(p.log))
		}
	})
	return p
}

// httpAddr returns the status address the process logged.
func (p *proc) httpAddr(t *testing.T) string {
	t.Helper()
	var addr string
	sluicetest.WaitEvery(t, 30*time.Second, 20*time.Millisecond, p.id+" serving status", func() bool {
		f, err := os.Open(p.log)
		if err != nil {
			return false
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := sc.Text()
			if strings.Contains(line, `msg="mesos: serving status"`) {
				for _, f := range strings.Fields(line) {
					if a, ok := strings.CutPrefix(f, "http="); ok {
						addr = a
						return true
					}
				}
			}
		}
		return false
	})
	return addr
}

func (p *proc) status(t *testing.T) mesosstatus.Status {
	var st mesosstatus.Status
	if err := getJSON("http://"+p.httpAddr(t)+"/v1/mesos/status", &st); err != nil {
		t.Logf("status of %s: %v", p.id, err)
	}
	return st
}

// TestHAFailover runs two sluice-mesos processes. SIGKILL of the leader:
// the standby takes over within the failover timeout, with the same
// framework ID, and adopts the running tasks: the number of task
// processes never exceeds the desired count and nothing is launched.
// SIGTERM of the new leader: it steps down at once without tearing down
// the framework, and a third process takes over.
func TestHAFailover(t *testing.T) {
	e := newEnv(t, twoAgents()...)
	peak := e.watchProcesses()
	poolsFile := filepath.Join(t.TempDir(), "pools.yaml")
	pools := `
- name: count
  instances: 3
  cpus: 0.5
  mem: 128
  env: {SLUICE_NODE_INSECURE: "1", SLUICE_TEST_RECORDS: "100000000", SLUICE_TEST_RATE: "200", SLUICE_TEST_KEYS: "1000",
        SLUICE_TEST_GEN_PARALLELISM: "1", SLUICE_TEST_COUNT_PARALLELISM: "3"}
`
	if err := os.WriteFile(poolsFile, []byte(pools), 0o644); err != nil {
		t.Fatal(err)
	}
	s1 := e.startProc("s1", poolsFile)
	var fid string
	sluicetest.WaitEvery(t, waitTimeout, 20*time.Millisecond, "s1 leading with 3 running tasks", func() bool {
		st, err := e.readStatus()
		fid = st.FrameworkID
		return err == nil && st.Scheduler == "s1" && st.Role == mesosstatus.RoleLeader && len(st.Pools) == 1 && st.Pools[0].Running == 3
	})
	s2 := e.startProc("s2", poolsFile)
	if st := s2.status(t); st.Role != mesosstatus.RoleStandby {
		t.Fatalf("s2 role %q, want standby", st.Role)
	}
	e.waitMembersAreTasks()
	before := slices.Sorted(maps.Keys(e.running()))

	killed := time.Now()
	s1.svc.Kill()
	sluicetest.WaitEvery(t, 60*time.Second, 20*time.Millisecond, "s2 leading with the tasks confirmed", func() bool {
		st, err := e.readStatus()
		if err != nil || st.Scheduler != "s2" || st.Role != mesosstatus.RoleLeader || st.Subscription.State != mesosstatus.Subscribed ||
			len(st.Pools) != 1 || st.Pools[0].Running != 3 {
			return false
		}
		for _, ts := range st.Tasks {
			if ts.Unconfirmed {
				return false
			}
		}
		return true
	})
	t.Logf("s2 took over %v after s1 was killed", time.Since(killed).Round(time.Millisecond))
	if st, _ := e.readStatus(); st.FrameworkID != fid {
		t.Errorf("framework ID %q after failover, want %q", st.FrameworkID, fid)
	}
	if fw := e.master.Frameworks(); len(fw) != 1 || fw[0].ID != fid || !fw[0].Connected {
		t.Errorf("frameworks = %+v, want %s connected", fw, fid)
	}
	if got := slices.Sorted(maps.Keys(e.running())); !slices.Equal(got, before) || len(e.master.Tasks()) != 3 {
		t.Errorf("tasks after failover %v (%d launched), want %v and no launch", got, len(e.master.Tasks()), before)
	}
	if p := peak(); p != 3 {
		t.Errorf("peak of %d task processes, want 3", p)
	}

	// A clean stop hands over at once: the lock is released, the
	// framework stays.
	s3 := e.startProc("s3", poolsFile)
	if st := s3.status(t); st.Role != mesosstatus.RoleStandby {
		t.Fatalf("s3 role %q, want standby", st.Role)
	}
	stopped := time.Now()
	if err := s2.svc.Terminate(30 * time.Second); err != nil {
		t.Fatalf("s2 after SIGTERM: %v", err)
	}
	sluicetest.WaitEvery(t, 30*time.Second, 20*time.Millisecond, "s3 leading", func() bool {
		st, err := e.readStatus()
		return err == nil && st.Scheduler == "s3" && st.Subscription.State == mesosstatus.Subscribed && st.Pools[0].Running == 3
	})
	t.Logf("s3 took over %v after s2 was stopped", time.Since(stopped).Round(time.Millisecond))
	if time.Since(stopped) > 10*time.Second {
		t.Errorf("takeover after a clean stop took %v", time.Since(stopped))
	}
	if st, _ := e.readStatus(); st.FrameworkID != fid || len(e.master.Tasks()) != 3 || peak() != 3 {
		t.Errorf("after the clean handover: framework %s, %d tasks launched, peak %d", st.FrameworkID, len(e.master.Tasks()), peak())
	}
	e.waitMembersAreTasks()
}
