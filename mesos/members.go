package mesos

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/sluicehq/sluice/internal/backoff"
	"github.com/sluicehq/sluice/mesos/mesosstatus"
)

// The cluster's own view of its nodes: the members registered in Consul
// (the Consul service named after the cluster) with every check passing,
// which is what the nodes themselves act on. A node's ID is its task ID,
// "<pool>.<instance>.<random>", so each member belongs to a slot.
//
// A slot is launched only when no node of it is an active member. A node
// whose task ended (crashed, killed, its agent gone) stays a passing
// member until its TTL check expires (about 3 s), and a node whose agent
// the master cannot reach may be alive and in the cluster for the whole
// partition; a replacement launched meanwhile would be a second active
// node of the same slot. Waiting for the cluster to drop the old node
// first means that no slot is ever active twice, as Consul sees it.
//
// Until the first look at Consul succeeds, and while Consul cannot be
// read, nothing is launched (nothing could be persisted either).

// membership is one look at the cluster's members.
type membership struct {
	active []string // node IDs of the passing members
	err    error    // the look failed: the members are unknown
}

// watchMembers sends the cluster's members to out every time they change,
// with Consul blocking queries, until ctx ends. Failures are sent too,
// then retried with backoff.
func (s *Scheduler) watchMembers(ctx context.Context, out chan<- membership) {
	retry := backoff.New(200*time.Millisecond, 5*time.Second, 0.5)
	var index uint64
	for ctx.Err() == nil {
		q := (&api.QueryOptions{WaitIndex: index, WaitTime: time.Minute}).WithContext(ctx)
		entries, meta, err := s.consul.Health().Service(s.cfg.Cluster, "", false, q)
		var mb membership
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			mb.err = fmt.Errorf("mesos: reading the members of cluster %s in Consul: %w", s.cfg.Cluster, err)
		} else {
			mb.active = activeNodes(entries)
		}
		select {
		case out <- mb:
		case <-ctx.Done():
			return
		}
		if err != nil {
			// A restarted Consul starts over with lower indexes.
			index = 0
			backoff.Sleep(ctx, retry.Next())
			continue
		}
		retry.Reset()
		if meta.LastIndex < index {
			index = 0
		} else {
			index = meta.LastIndex
		}
	}
}

// activeNodes returns the node IDs (meta sluice_id, written by
// cluster/consul) of the entries whose checks all pass, sorted.
func activeNodes(entries []*api.ServiceEntry) []string {
	var ids []string
	for _, e := range entries {
		if e.Service == nil || e.Checks.AggregatedStatus() != api.HealthPassing {
			continue
		}
		if id := e.Service.Meta["sluice_id"]; id != "" {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// members handles a look at the cluster's members.
func (m *machine) members(now time.Time, mb membership) output {
	if mb.err != nil {
		if m.membersKnown {
			m.problem(now, mesosstatus.ProblemConsul, mb.err.Error())
		}
		m.membersKnown, m.membersErr = false, mb.err.Error()
	} else {
		m.membersKnown, m.membersErr = true, ""
		m.activeNodes = map[slotKey][]string{}
		for _, id := range mb.active {
			if k, ok := parseTaskID(id); ok {
				m.activeNodes[k] = append(m.activeNodes[k], id)
			}
		}
	}
	var out output
	m.finish(now, &out)
	return out
}

// memberReason explains why slot k waits for the cluster, or "".
func (m *machine) memberReason(k slotKey) string {
	if !m.membersKnown {
		r := "waiting to read the cluster's members in Consul"
		if m.membersErr != "" {
			r += " (" + m.membersErr + ")"
		}
		return r
	}
	if nodes := m.activeNodes[k]; len(nodes) > 0 {
		return "waiting for node " + strings.Join(nodes, ", ") + " of the instance's previous task to leave the cluster (still an active member in Consul)"
	}
	return ""
}
