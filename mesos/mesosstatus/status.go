package mesosstatus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/consul/api"
)

// ErrNoStatus is returned by ReadStatus when no scheduler has published a
// status for the cluster yet.
var ErrNoStatus = errors.New("mesosstatus: no scheduler status published")

// KeyPrefix is the Consul KV prefix under which the framework of cluster
// keeps its state: sluice/<cluster>/mesos/.
func KeyPrefix(cluster string) string { return "sluice/" + cluster + "/mesos/" }

// Key is the Consul KV key holding the published Status of cluster.
func Key(cluster string) string { return KeyPrefix(cluster) + "status" }

// Role is a scheduler process's part in leader election.
type Role string

const (
	// RoleStandby waits for the leader lock.
	RoleStandby Role = "standby"
	// RoleLeader holds the lock and runs the framework.
	RoleLeader Role = "leader"
	// RoleStopped is not running.
	RoleStopped Role = "stopped"
)

func (r Role) String() string { return string(r) }

// SubscriptionState is the state of the leader's subscription to the
// master.
type SubscriptionState string

// The states of a subscription.
const (
	Disconnected SubscriptionState = "disconnected"
	Subscribing  SubscriptionState = "subscribing"
	Subscribed   SubscriptionState = "subscribed"
)

func (s SubscriptionState) String() string { return string(s) }

// ProblemKind classifies a Problem.
type ProblemKind string

const (
	// ProblemSubscription: a SUBSCRIBE failed (master unreachable, HTTP
	// error such as 401 or 503) or a subscription ended (stream error,
	// missed heartbeats).
	ProblemSubscription ProblemKind = "subscription"
	// ProblemMaster: the master sent an ERROR event (e.g. framework not
	// authorized, failed over, removed).
	ProblemMaster ProblemKind = "master"
	// ProblemAccept: an ACCEPT was refused (e.g. 400 or 403) or failed.
	ProblemAccept ProblemKind = "accept"
	// ProblemRescind: the master rescinded an offer.
	ProblemRescind ProblemKind = "rescind"
	// ProblemCall: another call to the master failed.
	ProblemCall ProblemKind = "call"
	// ProblemAgent: an agent was lost or became unreachable.
	ProblemAgent ProblemKind = "agent"
	// ProblemDeployment: a pool exceeded its retries and failed.
	ProblemDeployment ProblemKind = "deployment"
	// ProblemConsul: the scheduler could not read or write its state.
	ProblemConsul ProblemKind = "consul"
)

func (k ProblemKind) String() string { return string(k) }

// Status is what the scheduler reports: its role, its subscription, every
// pool and every task (with, for a slot without a task, why it is
// pending), and recent problems. The leader publishes it to Consul (see
// ReadStatus) and serves it on GET /v1/mesos/status.
type Status struct {
	Cluster string `json:"cluster"`
	// Scheduler is the ID of the scheduler process reporting.
	Scheduler string `json:"scheduler"`
	Role      Role   `json:"role"`
	// LeaderSince is when this scheduler became leader.
	LeaderSince time.Time `json:"leader_since,omitzero"`
	// Master is the configured master URL(s).
	Master       string             `json:"master"`
	FrameworkID  string             `json:"framework_id,omitempty"`
	Subscription SubscriptionStatus `json:"subscription"`
	Pools        []PoolStatus       `json:"pools"`
	Tasks        []TaskStatus       `json:"tasks"`
	// Problems are the most recent problems, oldest first (at most 20).
	Problems []Problem `json:"problems,omitempty"`
	Updated  time.Time `json:"updated"`
}

// SubscriptionStatus describes the subscription to the master.
type SubscriptionStatus struct {
	State SubscriptionState `json:"state"`
	// Since is when State was entered.
	Since time.Time `json:"since,omitzero"`
	// Leader is the scheduler API endpoint of the master subscribed to,
	// or being subscribed to: the leading master, found by following its
	// redirects.
	Leader           string        `json:"leader,omitempty"`
	Heartbeat        time.Duration `json:"-"`
	HeartbeatSeconds float64       `json:"heartbeat_seconds,omitempty"`
	// Attempts counts SUBSCRIBE calls of this leadership term.
	Attempts int `json:"attempts"`
	// Suppressed reports whether offers are suppressed (nothing pending).
	Suppressed bool `json:"suppressed"`
	// Rescinded counts offers the master rescinded.
	Rescinded int `json:"rescinded_offers"`
	// RefusedAccepts counts ACCEPT calls that failed.
	RefusedAccepts int `json:"refused_accepts"`
	// LastError is the most recent problem, of any kind.
	LastError   string    `json:"last_error,omitempty"`
	LastErrorAt time.Time `json:"last_error_at,omitzero"`
}

// PoolStatus sums up a pool.
type PoolStatus struct {
	Name string `json:"name"`
	// Desired is the pool's instances; Running those with a TASK_RUNNING
	// task; Starting those launched and not running yet; Pending those
	// without a task.
	Desired  int `json:"desired"`
	Running  int `json:"running"`
	Starting int `json:"starting"`
	Pending  int `json:"pending"`
	// Unreachable counts instances whose task is on an agent the master
	// cannot reach (TASK_UNREACHABLE): they are waited for, not replaced.
	Unreachable int `json:"unreachable,omitempty"`
	// Killing counts tasks being killed (scale-down, duplicates).
	Killing int `json:"killing"`
	// Restarts counts relaunches after tasks ended unexpectedly.
	Restarts int `json:"restarts"`
	// Failed is set when an instance failed more than the pool's retries
	// in a row; FailedReason holds the last failure.
	Failed       bool      `json:"failed"`
	FailedReason string    `json:"failed_reason,omitempty"`
	FailedAt     time.Time `json:"failed_at,omitzero"`
	// PendingReasons are the distinct reasons of the pending instances.
	PendingReasons []string `json:"pending_reasons,omitempty"`
}

// TaskStatus describes one instance of a pool (with its task, or pending)
// or an extra task being killed.
type TaskStatus struct {
	Pool     string `json:"pool"`
	Instance int    `json:"instance"`
	// ID is the Mesos task ID, and the node ID; empty while pending.
	ID    string `json:"id,omitempty"`
	Agent string `json:"agent,omitempty"`
	Host  string `json:"host,omitempty"`
	// Ports are the ports allocated to the task: the node's actor
	// endpoint, then its control API, both on Host.
	Ports []uint64 `json:"ports,omitempty"`
	// Volume is the persistence ID of the instance's persistent volume.
	Volume string `json:"volume,omitempty"`
	// State is the Mesos task state (TASK_RUNNING …) or PENDING.
	State string `json:"state"`
	// Message is the last status message of the task, or of the
	// instance's previous task.
	Message string `json:"message,omitempty"`
	// Pending says why a pending instance has no task.
	Pending string `json:"pending,omitempty"`
	// Unconfirmed is set while the master has not answered about the
	// task since the scheduler (re)subscribed.
	Unconfirmed bool `json:"unconfirmed,omitempty"`
	// Killing is set for a task being killed.
	Killing bool `json:"killing,omitempty"`
	// Restarts counts relaunches of the instance; Failures its
	// consecutive failures.
	Restarts int       `json:"restarts"`
	Failures int       `json:"failures"`
	Since    time.Time `json:"since,omitzero"`
}

// Problem is something that went wrong.
type Problem struct {
	At      time.Time   `json:"at"`
	Kind    ProblemKind `json:"kind"`
	Message string      `json:"message"`
}

// ReadStatus returns the status the leading scheduler of cluster last
// published to Consul (Key(cluster)), or ErrNoStatus. Status.Updated tells
// how fresh it is. It blocks until Consul answers or ctx ends.
func ReadStatus(ctx context.Context, c *api.Client, cluster string) (Status, error) {
	pair, _, err := c.KV().Get(Key(cluster), (&api.QueryOptions{}).WithContext(ctx))
	if err != nil {
		return Status{}, fmt.Errorf("mesosstatus: reading status of cluster %s: %w", cluster, err)
	}
	if pair == nil {
		return Status{}, ErrNoStatus
	}
	var st Status
	if err := json.Unmarshal(pair.Value, &st); err != nil {
		return Status{}, fmt.Errorf("mesosstatus: decoding status of cluster %s: %w", cluster, err)
	}
	return st, nil
}
