package mesos

import (
	"maps"
	"net"
	"slices"
	"strconv"

	mesos "github.com/mesos/mesos-go/api/v1/lib"

	"github.com/sluicehq/sluice/sdk/nodeenv"
)

// taskInfo builds the TaskInfo launching t: the pool's command (with the
// URIs to fetch, e.g. the node executable), its resources taken from the
// offer, and the node's environment, with its addresses on the agent's
// hostname and allocated ports (ports.go). The task ID doubles as the
// node ID (the node takes $MESOS_TASK_ID), so a relaunched node is a new
// member.
func (m *machine) taskInfo(t *task, p *Pool, resources []mesos.Resource) mesos.TaskInfo {
	env := map[string]string{}
	maps.Copy(env, p.Env)
	env[nodeenv.Cluster] = m.cfg.cluster
	env[nodeenv.Consul] = m.cfg.nodeConsul
	env["HOST"] = t.hostname
	if len(t.ports) == nodePorts {
		actor := net.JoinHostPort(t.hostname, strconv.FormatUint(t.ports[0], 10))
		env[nodeenv.Bind], env[nodeenv.Advertise] = actor, actor
		env[nodeenv.HTTP] = net.JoinHostPort(t.hostname, strconv.FormatUint(t.ports[1], 10))
	}
	switch {
	case p.Volume != nil:
		env[nodeenv.DataDir] = p.Volume.path()
	case p.DataDir != "":
		env[nodeenv.DataDir] = p.DataDir
	}
	vars := make([]mesos.Environment_Variable, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		v := env[k]
		vars = append(vars, mesos.Environment_Variable{Name: k, Value: &v})
	}

	shell := p.Command.Shell
	value := p.Command.Value
	cmd := &mesos.CommandInfo{Value: &value, Shell: &shell, Environment: &mesos.Environment{Variables: vars}}
	if !shell {
		// arguments is the whole argv, argv[0] included.
		cmd.Arguments = append([]string{value}, p.Command.Args...)
	}
	for _, u := range p.URIs {
		cu := mesos.CommandInfo_URI{Value: u.Value}
		if u.Executable {
			cu.Executable = ptr(true)
		}
		cu.Extract = ptr(u.Extract)
		if u.Cache {
			cu.Cache = ptr(true)
		}
		if u.OutputFile != "" {
			cu.OutputFile = ptr(u.OutputFile)
		}
		cmd.URIs = append(cmd.URIs, cu)
	}
	return mesos.TaskInfo{
		Name:      "sluice-" + m.cfg.cluster + "-" + t.key.String(),
		TaskID:    mesos.TaskID{Value: t.id},
		AgentID:   mesos.AgentID{Value: t.agentID},
		Resources: resources,
		Command:   cmd,
		KillPolicy: &mesos.KillPolicy{
			GracePeriod: &mesos.DurationInfo{Nanoseconds: m.cfg.killGrace.Nanoseconds()},
		},
		Labels: &mesos.Labels{Labels: []mesos.Label{
			{Key: "sluice_cluster", Value: ptr(m.cfg.cluster)},
			{Key: "sluice_pool", Value: ptr(t.key.pool)},
		}},
	}
}

func ptr[T any](v T) *T { return &v }
