package mesos

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// DefaultRetries is the Retries of a pool in a pools file that does not
// set it.
const DefaultRetries = 3

// Pool is a node pool: Instances identical node tasks, each with the
// same resources and command. It is the unit the scheduler deploys,
// scales and kills; SetPools gives the desired set.
//
// Each instance of a pool (a slot, 0..Instances-1) has at most one live
// task. When a slot's task fails it is relaunched after a backoff; after
// more than Retries consecutive failures of one slot the whole pool is
// marked failed (its other tasks keep running, nothing more is launched)
// until SetPools changes its spec.
type Pool struct {
	// Name identifies the pool: 1-64 characters of A-Z a-z 0-9 _ -.
	Name string `json:"name" yaml:"name"`
	// Instances is the number of node tasks.
	Instances int `json:"instances" yaml:"instances"`
	// CPUs, Mem (MB) and Disk (MB) each task needs, from one offer.
	CPUs float64 `json:"cpus" yaml:"cpus"`
	Mem  float64 `json:"mem" yaml:"mem"`
	Disk float64 `json:"disk" yaml:"disk"`
	// GPUs each task needs (Mesos "gpus"); needs Config.GPUResources.
	GPUs float64 `json:"gpus,omitempty" yaml:"gpus,omitempty"`
	// Retries is how many times a slot is relaunched after consecutive
	// failures before the pool is marked failed. 0 means the first failure
	// fails the pool. A pools file that leaves it out gets DefaultRetries.
	Retries int `json:"retries" yaml:"retries"`
	// Command runs the node. Empty: Config.NodeBinary, fetched into the
	// sandbox.
	Command Command `json:"command" yaml:"command"`
	// URIs are fetched into the sandbox before the command runs.
	URIs []URI `json:"uris,omitempty" yaml:"uris,omitempty"`
	// Env is added to the task's environment. The scheduler sets
	// SLUICE_CLUSTER, SLUICE_CONSUL, HOST, and SLUICE_BIND,
	// SLUICE_ADVERTISE and SLUICE_HTTP from the ports Mesos allocated,
	// itself (they cannot be set here), and SLUICE_DATA_DIR from DataDir.
	Env map[string]string `json:"env,omitempty" yaml:"env,omitempty"`
	// DataDir is the node's data directory (SLUICE_DATA_DIR), a relative
	// path inside the sandbox. Empty: the node's default,
	// $MESOS_SANDBOX/data, or Volume.Path with a Volume.
	DataDir string `json:"data_dir,omitempty" yaml:"data_dir,omitempty"`
	// Volume, if set, keeps each instance's data directory on a
	// persistent volume, reserved and created on the agent where the
	// instance first runs and reused when it is relaunched there
	// (volumes.go). It needs a framework role (Config.Roles).
	Volume *VolumeSpec `json:"volume,omitempty" yaml:"volume,omitempty"`
	// Autoscale, if set, sizes the pool from the operators' demand
	// (nodescale.go): Instances is then only the size it starts at.
	// At most one pool may have it.
	Autoscale *PoolAutoscale `json:"autoscale,omitempty" yaml:"autoscale,omitempty"`
}

// PoolAutoscale bounds and paces an autoscaled pool: the scheduler grows
// it when the operators need more instances than its nodes hold, and
// shrinks it, one drained node at a time, when they need fewer
// (autoscale.NodePolicy; docs/mesos.md).
type PoolAutoscale struct {
	// Min and Max bound the nodes (1 ≤ Min ≤ Max).
	Min int `json:"min" yaml:"min"`
	Max int `json:"max" yaml:"max"`
	// InstancesPerCPU is a node's capacity per cpu of the pool's cpus
	// (autoscale.PerNode); 0: autoscale.DefaultInstancesPerCPU.
	InstancesPerCPU float64 `json:"instances_per_cpu,omitempty" yaml:"instances_per_cpu,omitempty"`
	// ScaleDownAfter is the stabilisation window of shrinking: every
	// recommendation over it said fewer nodes (0: 5m).
	ScaleDownAfter time.Duration `json:"scale_down_after,omitempty" yaml:"scale_down_after,omitempty"`
	// CoolDown is the least time between two changes (0: 1m).
	CoolDown time.Duration `json:"cool_down,omitempty" yaml:"cool_down,omitempty"`
}

// clamp returns n within a's bounds.
func (a *PoolAutoscale) clamp(n int) int { return min(max(n, a.Min), a.Max) }

// VolumeSpec is the persistent volume of each instance of a pool.
type VolumeSpec struct {
	// Size of the volume in MB (reserved disk).
	Size float64 `json:"size" yaml:"size"`
	// Path is the volume's container path in the sandbox, which becomes
	// the node's data directory (SLUICE_DATA_DIR). Default "data".
	Path string `json:"path,omitempty" yaml:"path,omitempty"`
}

func (v *VolumeSpec) path() string {
	if v.Path == "" {
		return "data"
	}
	return v.Path
}

// Command is how a task runs its node.
type Command struct {
	// Value is the executable (Shell false) or the shell command (Shell
	// true).
	Value string `json:"value" yaml:"value"`
	// Args are the arguments after the executable (Shell false only).
	Args []string `json:"args,omitempty" yaml:"args,omitempty"`
	// Shell runs Value with /bin/sh -c. Default false: Value is executed
	// directly with Args.
	Shell bool `json:"shell,omitempty" yaml:"shell,omitempty"`
}

// URI is a file the Mesos fetcher puts into the sandbox
// (CommandInfo.URI).
type URI struct {
	// Value is the URI: http(s)://, hdfs://, file:// or an absolute path.
	Value string `json:"value" yaml:"value"`
	// Executable makes the fetched file executable.
	Executable bool `json:"executable,omitempty" yaml:"executable,omitempty"`
	// Extract unpacks archives (Mesos extracts by default; here only
	// when set).
	Extract bool `json:"extract,omitempty" yaml:"extract,omitempty"`
	// Cache lets the fetcher cache the file.
	Cache bool `json:"cache,omitempty" yaml:"cache,omitempty"`
	// OutputFile names the file in the sandbox (default: base name).
	OutputFile string `json:"output_file,omitempty" yaml:"output_file,omitempty"`
}

// reservedEnv are the variables the scheduler sets on every task.
var reservedEnv = []string{"SLUICE_CLUSTER", "SLUICE_CONSUL", "HOST", "SLUICE_BIND", "SLUICE_ADVERTISE", "SLUICE_HTTP"}

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// maxScalar bounds resource amounts (Mesos fixed point: 3 decimals).
const maxScalar = 1 << 40

// Validate reports the first invalid field of p as a *ConfigError whose
// Field is prefixed with field (e.g. "pools[0]").
func (p *Pool) Validate(field string) error {
	f := func(name string) string { return field + "." + name }
	if !nameRE.MatchString(p.Name) {
		return fieldErr(f("name"), "%q must be 1-64 characters of A-Z a-z 0-9 _ -", p.Name)
	}
	if p.Instances < 0 || p.Instances > 10000 {
		return fieldErr(f("instances"), "%d must be between 0 and 10000", p.Instances)
	}
	if p.Retries < 0 {
		return fieldErr(f("retries"), "%d must not be negative", p.Retries)
	}
	for _, r := range []struct {
		name string
		v    float64
	}{{"cpus", p.CPUs}, {"mem", p.Mem}, {"disk", p.Disk}, {"gpus", p.GPUs}} {
		if math.IsNaN(r.v) || r.v < 0 || r.v > maxScalar {
			return fieldErr(f(r.name), "%v must be a non-negative number", r.v)
		}
	}
	if p.CPUs < 0.01 {
		return fieldErr(f("cpus"), "%v: a node needs at least 0.01 cpus", p.CPUs)
	}
	if p.Mem < 32 {
		return fieldErr(f("mem"), "%v: a node needs at least 32 MB of memory", p.Mem)
	}
	if p.Command.Value == "" && len(p.Command.Args) > 0 {
		return fieldErr(f("command.value"), "args are given but no executable; set command.value")
	}
	if p.Command.Shell && len(p.Command.Args) > 0 {
		return fieldErr(f("command.args"), "a shell command takes no args; put them into command.value or set shell: false")
	}
	if strings.ContainsRune(p.Command.Value, 0) {
		return fieldErr(f("command.value"), "contains a NUL byte")
	}
	for i, u := range p.URIs {
		if err := validURI(u.Value); err != nil {
			return fieldErr(fmt.Sprintf("%s.uris[%d].value", field, i), "%v", err)
		}
		if u.OutputFile != "" && (path.IsAbs(u.OutputFile) || !isLocal(u.OutputFile)) {
			return fieldErr(fmt.Sprintf("%s.uris[%d].output_file", field, i), "%q must be a relative path inside the sandbox", u.OutputFile)
		}
	}
	for k, v := range p.Env {
		if !envNameRE.MatchString(k) {
			return fieldErr(f("env"), "%q is not a valid environment variable name", k)
		}
		if slices.Contains(reservedEnv, k) {
			return fieldErr(f("env."+k), "is set by the scheduler (cluster and Consul from --cluster and --node-consul, addresses from the ports Mesos allocates on the agent); remove it")
		}
		if k == "SLUICE_DATA_DIR" {
			return fieldErr(f("env."+k), "use data_dir instead")
		}
		if strings.ContainsRune(v, 0) {
			return fieldErr(f("env."+k), "contains a NUL byte")
		}
	}
	if p.DataDir != "" && (path.IsAbs(p.DataDir) || !isLocal(p.DataDir) || strings.ContainsRune(p.DataDir, 0)) {
		return fieldErr(f("data_dir"), "%q must be a relative path inside the sandbox (e.g. the container path of a persistent volume); host paths would be shared by the nodes of an agent", p.DataDir)
	}
	if v := p.Volume; v != nil {
		if math.IsNaN(v.Size) || v.Size < 1 || v.Size > maxScalar {
			return fieldErr(f("volume.size"), "%v: a volume needs at least 1 MB", v.Size)
		}
		if v.Path != "" && (path.IsAbs(v.Path) || !isLocal(v.Path) || strings.ContainsRune(v.Path, 0)) {
			return fieldErr(f("volume.path"), "%q must be a relative path inside the sandbox (the volume's container path)", v.Path)
		}
		if p.DataDir != "" && path.Clean(p.DataDir) != path.Clean(v.path()) {
			return fieldErr(f("data_dir"), "%q differs from volume.path %q: with a volume the data directory is the volume; leave data_dir out", p.DataDir, v.path())
		}
	}
	if a := p.Autoscale; a != nil {
		switch {
		case a.Min < 1 || a.Min > 10000:
			return fieldErr(f("autoscale.min"), "%d must be between 1 and 10000", a.Min)
		case a.Max < a.Min || a.Max > 10000:
			return fieldErr(f("autoscale.max"), "%d must be between autoscale.min (%d) and 10000", a.Max, a.Min)
		case math.IsNaN(a.InstancesPerCPU) || a.InstancesPerCPU < 0 || a.InstancesPerCPU > maxScalar:
			return fieldErr(f("autoscale.instances_per_cpu"), "%v must be a non-negative number", a.InstancesPerCPU)
		case a.ScaleDownAfter < 0:
			return fieldErr(f("autoscale.scale_down_after"), "%v must not be negative", a.ScaleDownAfter)
		case a.CoolDown < 0:
			return fieldErr(f("autoscale.cool_down"), "%v must not be negative", a.CoolDown)
		}
	}
	return nil
}

func isLocal(p string) bool {
	c := path.Clean(p)
	return c != ".." && !strings.HasPrefix(c, "../") && c != "."
}

func validURI(v string) error {
	if v == "" {
		return errors.New("empty URI")
	}
	if strings.HasPrefix(v, "/") {
		return nil
	}
	u, err := url.Parse(v)
	if err != nil || u.Scheme == "" {
		return fmt.Errorf("%q is neither an absolute path nor a URI with a scheme (http://, https://, file://, hdfs://)", v)
	}
	return nil
}

// fingerprint identifies the spec of a pool, to tell whether SetPools
// changed it (which clears a failed state).
func (p *Pool) fingerprint() string {
	b, _ := json.Marshal(p)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// clone returns a deep copy of p.
func (p Pool) clone() Pool {
	if p.Volume != nil {
		v := *p.Volume
		p.Volume = &v
	}
	if p.Autoscale != nil {
		a := *p.Autoscale
		p.Autoscale = &a
	}
	p.Command.Args = slices.Clone(p.Command.Args)
	p.URIs = slices.Clone(p.URIs)
	if p.Env != nil {
		env := make(map[string]string, len(p.Env))
		for k, v := range p.Env {
			env[k] = v
		}
		p.Env = env
	}
	return p
}

// withNodeBinary returns p with the node binary as its command when it has
// none.
func (p Pool) withNodeBinary(nodeBinary string) Pool {
	if p.Command.Value != "" || nodeBinary == "" {
		return p
	}
	name := nodeBinary
	if u, err := url.Parse(nodeBinary); err == nil && u.Path != "" {
		name = u.Path
	}
	p.URIs = append(slices.Clone(p.URIs), URI{Value: nodeBinary, Executable: true})
	p.Command = Command{Value: "./" + path.Base(name)}
	return p
}

// ValidatePools validates pools and checks that names are unique.
func ValidatePools(pools []Pool) error {
	seen := map[string]bool{}
	autoscaled := ""
	for i := range pools {
		field := fmt.Sprintf("pools[%d]", i)
		if err := pools[i].Validate(field); err != nil {
			return err
		}
		if pools[i].Autoscale != nil {
			if autoscaled != "" {
				return fieldErr(field+".autoscale", "pool %q is autoscaled already: at most one pool may be (they would share one demand)", autoscaled)
			}
			autoscaled = pools[i].Name
		}
		if seen[pools[i].Name] {
			return fieldErr(field+".name", "%q is used by another pool; pool names must be unique", pools[i].Name)
		}
		seen[pools[i].Name] = true
	}
	return nil
}

// ParsePools parses a pools file: a YAML (or JSON) list of pools, with
// snake_case keys as in the Pool field tags. Unknown keys are errors;
// Retries defaults to DefaultRetries. The pools are validated.
//
//   - name: count
//     instances: 3
//     cpus: 1
//     mem: 1024
//     disk: 2048
//     retries: 5
//     env: {SLUICE_TEST_RATE: "1000"}
func ParsePools(data []byte) ([]Pool, error) {
	var pools []Pool
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&pools); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, fmt.Errorf("mesos: pools: %w (want a list of pools)", err)
	}
	// Tell "retries: 0" from no retries at all.
	var retries []struct {
		Retries *int `yaml:"retries"`
	}
	if err := yaml.Unmarshal(data, &retries); err != nil {
		return nil, fmt.Errorf("mesos: pools: %w", err)
	}
	for i := range pools {
		if i < len(retries) && retries[i].Retries == nil {
			pools[i].Retries = DefaultRetries
		}
	}
	if err := ValidatePools(pools); err != nil {
		return nil, err
	}
	return pools, nil
}
