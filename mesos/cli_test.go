package mesos

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestParseArgs(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SLUICE_MESOS_MASTER", "http://from-env:5050")
	t.Setenv("SLUICE_CLUSTER", "envcluster")
	t.Setenv("SLUICE_MESOS_ROLE", "a,b")
	t.Setenv("SLUICE_MESOS_FAILOVER_TIMEOUT", "1h")
	cfg, pools, err := parseArgs([]string{"--consul", "c:1", "--principal", "p", "--secret-file", secret, "--pools", "x.yaml", "--checkpoint=false"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Master != "http://from-env:5050" || cfg.Consul != "c:1" || cfg.Cluster != "envcluster" || !slices.Equal(cfg.Roles, []string{"a", "b"}) ||
		cfg.FailoverTimeout != time.Hour || cfg.Secret != "s3cret" || cfg.Checkpoint || pools != "x.yaml" {
		t.Errorf("config = %+v, pools %q", cfg, pools)
	}
	// Flags win over the environment.
	if cfg, _, err := parseArgs([]string{"--master", "http://flag:5050", "--cluster", "f"}); err != nil || cfg.Master != "http://flag:5050" || cfg.Cluster != "f" {
		t.Errorf("flags over env: %+v, %v", cfg, err)
	}
	t.Setenv("SLUICE_MESOS_SESSION_TTL", "soon")
	if _, _, err := parseArgs(nil); err == nil {
		t.Error("a bad duration in the environment was accepted")
	}
}
