package mesos

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*Config)
		field string // "" = valid
	}{
		{"defaults", func(*Config) {}, ""},
		{"several masters", func(c *Config) { c.Master = "http://m1:5050, http://m2:5050/" }, ""},
		{"no master", func(c *Config) { c.Master = "" }, "Master"},
		{"master without scheme", func(c *Config) { c.Master = "m1:5050" }, "Master"},
		{"bad second master", func(c *Config) { c.Master = "http://m1:5050,ftp://x" }, "Master"},
		{"cluster", func(c *Config) { c.Cluster = "a/b" }, "Cluster"},
		{"cluster not a DNS label", func(c *Config) { c.Cluster = "a_b" }, "Cluster"},
		{"role", func(c *Config) { c.Roles = []string{"ok", "-bad"} }, "Roles[1]"},
		{"nested role", func(c *Config) { c.Roles = []string{"eng/streams"} }, ""},
		{"secret without principal", func(c *Config) { c.Secret = "s" }, "Secret"},
		{"failover shorter than a takeover", func(c *Config) { c.FailoverTimeout = 20 * time.Second }, "FailoverTimeout"},
		{"session TTL below Consul's minimum", func(c *Config) { c.SessionTTL = time.Second }, "SessionTTL"},
		{"encoding", func(c *Config) { c.Encoding = "xml" }, "Encoding"},
		{"backoff order", func(c *Config) { c.RelaunchBackoffMax = time.Millisecond }, "RelaunchBackoffMax"},
		{"node binary", func(c *Config) { c.NodeBinary = "relative/path" }, "NodeBinary"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			c.Master = "http://127.0.0.1:5050"
			c.User = "u"
			tc.edit(&c)
			err := c.Validate()
			var ce *ConfigError
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("got %v, want valid", err)
			case tc.field != "" && (!errors.As(err, &ce) || ce.Field != tc.field):
				t.Fatalf("got %v, want a ConfigError for %s", err, tc.field)
			}
		})
	}
}

func TestSchedulerEndpoint(t *testing.T) {
	for in, want := range map[string]string{
		"http://m:5050":          "http://m:5050/api/v1/scheduler",
		"http://m:5050/":         "http://m:5050/api/v1/scheduler",
		"https://m/mesos/api/v1": "https://m/mesos/api/v1",
	} {
		if got, err := schedulerEndpoint(in); err != nil || got != want {
			t.Errorf("schedulerEndpoint(%q) = %q, %v, want %q", in, got, err, want)
		}
	}
}

func TestParsePools(t *testing.T) {
	yamlDoc := `
- name: count
  instances: 3
  cpus: 0.5
  mem: 256
  disk: 100
  env: {SLUICE_TEST_RATE: "1000"}
- name: big
  instances: 1
  cpus: 8
  mem: 1024
  retries: 0
  command: {value: /opt/sluice/node, args: [-v]}
  uris: [{value: "https://example.com/node.tgz", extract: true}]
`
	pools, err := ParsePools([]byte(yamlDoc))
	if err != nil {
		t.Fatal(err)
	}
	if len(pools) != 2 || pools[0].Retries != DefaultRetries || pools[1].Retries != 0 || pools[0].Env["SLUICE_TEST_RATE"] != "1000" ||
		pools[1].Command.Args[0] != "-v" || !pools[1].URIs[0].Extract {
		t.Fatalf("pools = %+v", pools)
	}
	jsonDoc := `[{"name":"count","instances":2,"cpus":1,"mem":128}]`
	if pools, err := ParsePools([]byte(jsonDoc)); err != nil || len(pools) != 1 || pools[0].Instances != 2 {
		t.Fatalf("JSON: %+v, %v", pools, err)
	}
	for _, tc := range []struct{ doc, want string }{
		{`[{name: a, instances: 1, cpus: 1, mem: 128, cpu: 2}]`, "field cpu not found"},
		{`[{name: a, instances: 1, cpus: 1, mem: 16}]`, "pools[0].mem"},
		{`[{name: "a b", instances: 1, cpus: 1, mem: 128}]`, "pools[0].name"},
		{`[{name: a, instances: 1, cpus: 1, mem: 128}, {name: a, instances: 1, cpus: 1, mem: 128}]`, "pools[1].name"},
		{`[{name: a, instances: 1, cpus: 1, mem: 128, env: {SLUICE_CONSUL: x}}]`, "pools[0].env.SLUICE_CONSUL"},
		{`[{name: a, instances: 1, cpus: 1, mem: 128, command: {value: "x y", shell: true, args: [z]}}]`, "pools[0].command.args"},
		{`{name: a}`, "want a list of pools"},
		{`[{name: a, instances: 1, cpus: 1, mem: 128, data_dir: /var/lib/sluice}]`, "pools[0].data_dir"},
		{`[{name: a, instances: 1, cpus: 1, mem: 128, data_dir: ../x}]`, "pools[0].data_dir"},
	} {
		if _, err := ParsePools([]byte(tc.doc)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParsePools(%s) = %v, want an error about %s", tc.doc, err, tc.want)
		}
	}
}

func FuzzParsePools(f *testing.F) {
	f.Add([]byte(`[{name: a, instances: 1, cpus: 1, mem: 128}]`))
	f.Add([]byte(`- name: count
  instances: 3
  cpus: 0.5
  mem: 256
  uris: [{value: /bin/x, executable: true}]
  env: {A: b}
`))
	f.Add([]byte(`[{"name":"x","instances":2,"cpus":1e308,"mem":128}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		pools, err := ParsePools(data)
		if err != nil {
			return
		}
		// Whatever parses is valid and can be scheduled.
		if err := ValidatePools(pools); err != nil {
			t.Fatalf("ParsePools accepted invalid pools: %v", err)
		}
		h := newHarness(t, pools...)
		h.subscribe()
		h.offers(offer("a1", 4, 4096, 4096))
		_ = h.m.status(h.now)
	})
}
