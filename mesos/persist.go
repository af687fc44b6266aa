package mesos

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
)

// persisted is the part of the machine's state that outlives a leader: it
// is written to Consul (KV sluice/<cluster>/mesos/state) before every
// launch and after every change, and read by the next leader. With it the
// next leader knows every task that may exist, so it reconciles them
// before launching anything (no duplicates), and keeps counting failures
// and remembers failed pools.
type persisted struct {
	Version     int               `json:"version"`
	FrameworkID string            `json:"framework_id,omitempty"`
	Tasks       []persistedTask   `json:"tasks,omitempty"`
	Slots       []persistedSlot   `json:"slots,omitempty"`
	FailedPools []persistedFailed `json:"failed_pools,omitempty"`
	// Destroy are the persistent volumes to destroy: ID → agent.
	Destroy map[string]string `json:"destroy_volumes,omitempty"`
}

type persistedTask struct {
	ID           string    `json:"id"`
	Agent        string    `json:"agent"`
	Host         string    `json:"host,omitempty"`
	Ports        []uint64  `json:"ports,omitempty"`
	State        string    `json:"state"`
	Launched     time.Time `json:"launched"`
	RunningSince time.Time `json:"running_since,omitzero"`
	Reported     bool      `json:"reported,omitempty"`
	Kill         bool      `json:"kill,omitempty"`
	// UnreachableSince is when the task's agent became unreachable.
	UnreachableSince time.Time `json:"unreachable_since,omitzero"`
}

type persistedSlot struct {
	Pool       string    `json:"pool"`
	Instance   int       `json:"instance"`
	Failures   int       `json:"failures,omitempty"`
	Restarts   int       `json:"restarts,omitempty"`
	NextLaunch time.Time `json:"next_launch,omitzero"`
	LastReason string    `json:"last_reason,omitempty"`
	// Volume is the slot's persistent volume (persistence ID), on
	// VolumeAgent; VolumeCreated once it is known to exist.
	Volume        string `json:"volume,omitempty"`
	VolumeAgent   string `json:"volume_agent,omitempty"`
	VolumeCreated bool   `json:"volume_created,omitempty"`
}

type persistedFailed struct {
	Pool   string    `json:"pool"`
	Spec   string    `json:"spec"` // Pool.fingerprint
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

const persistedVersion = 1

// snapshot returns the persisted part of the state.
func (m *machine) snapshot() persisted {
	p := persisted{Version: persistedVersion, FrameworkID: m.frameworkID}
	for _, t := range m.tasks {
		if t.terminal() {
			continue
		}
		p.Tasks = append(p.Tasks, persistedTask{ID: t.id, Agent: t.agentID, Host: t.hostname, Ports: t.ports, State: t.state.String(),
			Launched: t.launched, RunningSince: t.runningSince, Reported: t.reported, Kill: t.kill,
			UnreachableSince: t.unreachableSince})
	}
	slices.SortFunc(p.Tasks, func(a, b persistedTask) int { return cmp.Compare(a.ID, b.ID) })
	for k, s := range m.slots {
		if s.failures == 0 && s.restarts == 0 && s.nextLaunch.IsZero() && s.volume == nil {
			continue
		}
		ps := persistedSlot{Pool: k.pool, Instance: k.index, Failures: s.failures,
			Restarts: s.restarts, NextLaunch: s.nextLaunch, LastReason: s.lastReason}
		if v := s.volume; v != nil {
			ps.Volume, ps.VolumeAgent, ps.VolumeCreated = v.id, v.agentID, v.created
		}
		p.Slots = append(p.Slots, ps)
	}
	slices.SortFunc(p.Slots, func(a, b persistedSlot) int {
		return cmp.Or(cmp.Compare(a.Pool, b.Pool), cmp.Compare(a.Instance, b.Instance))
	})
	if len(m.doomed) > 0 {
		p.Destroy = maps.Clone(m.doomed)
	}
	for _, name := range m.order {
		if ps := m.pools[name]; ps.failed {
			p.FailedPools = append(p.FailedPools, persistedFailed{Pool: name, Spec: ps.fp, Reason: ps.failedReason, At: ps.failedAt})
		}
	}
	return p
}

// restore loads a persisted state into a new machine, before setPools.
// Every task is unconfirmed until the master answers about it.
func (m *machine) restore(p persisted) error {
	if p.Version > persistedVersion {
		return fmt.Errorf("mesos: persisted state version %d is newer than this scheduler's (%d)", p.Version, persistedVersion)
	}
	m.frameworkID = p.FrameworkID
	for _, pt := range p.Tasks {
		state, ok := mesos.TaskState_value[pt.State]
		if !ok {
			state = int32(mesos.TASK_STAGING)
		}
		k, ok := parseTaskID(pt.ID)
		if !ok {
			k = slotKey{pool: "?", index: -1}
		}
		m.tasks[pt.ID] = &task{id: pt.ID, key: k, agentID: pt.Agent, hostname: pt.Host, ports: pt.Ports, state: mesos.TaskState(state),
			launched: pt.Launched, updated: pt.Launched, runningSince: pt.RunningSince, reported: pt.Reported, kill: pt.Kill,
			unreachableSince: pt.UnreachableSince}
	}
	for _, ps := range p.Slots {
		s := m.slot(slotKey{ps.Pool, ps.Instance}, m.start)
		s.failures, s.restarts, s.nextLaunch, s.lastReason = ps.Failures, ps.Restarts, ps.NextLaunch, ps.LastReason
		if ps.Volume != "" {
			s.volume = &slotVolume{id: ps.Volume, agentID: ps.VolumeAgent, created: ps.VolumeCreated}
		}
	}
	maps.Copy(m.doomed, p.Destroy)
	for _, f := range p.FailedPools {
		m.pools[f.Pool] = &poolState{fp: f.Spec, failed: true, failedReason: f.Reason, failedAt: f.At}
	}
	return nil
}

func (p persisted) marshal() []byte {
	b, _ := json.Marshal(p)
	return b
}
