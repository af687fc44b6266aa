package mesosstatus

import (
	"context"
	"errors"
	"fmt"
	"time"

	consul "github.com/hashicorp/consul/api"

	"github.com/sluicehq/sluice/control/api"
)

// Reader returns what a node's control API shows of the Mesos framework
// of cluster (control.Server.SetExternalStatus): its tasks as launched
// processes and its pending reasons, as its leader publishes them in the
// Consul at consulAddr; nothing when the cluster has no framework.
func Reader(consulAddr, cluster string) (func(context.Context) ([]api.LaunchedView, []string), error) {
	cfg := consul.DefaultConfig()
	cfg.Address = consulAddr
	c, err := consul.NewClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("mesosstatus: consul client: %w", err)
	}
	return func(ctx context.Context) ([]api.LaunchedView, []string) {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		st, err := ReadStatus(ctx, c, cluster)
		if errors.Is(err, ErrNoStatus) {
			return nil, nil // no Mesos framework in this cluster
		}
		if err != nil {
			return nil, []string{"Mesos framework status unavailable: " + err.Error()}
		}
		return Views(st)
	}, nil
}

// Views turns the framework's status into launcher entries and pending
// reasons.
func Views(st Status) ([]api.LaunchedView, []string) {
	var launched []api.LaunchedView
	var pending []string
	for _, t := range st.Tasks {
		v := api.LaunchedView{Operator: t.Pool, ID: t.ID, Where: "mesos agent " + t.Agent, State: t.State, Restarts: t.Restarts, Message: t.Message}
		if t.Pending != "" {
			v.Where, v.Message = "mesos (pending)", t.Pending
		}
		launched = append(launched, v)
	}
	for _, p := range st.Pools {
		for _, r := range p.PendingReasons {
			pending = append(pending, fmt.Sprintf("mesos pool %s: %d pending: %s", p.Name, p.Pending, r))
		}
		if p.Failed {
			pending = append(pending, fmt.Sprintf("mesos pool %s failed: %s", p.Name, p.FailedReason))
		}
	}
	if e := st.Subscription.LastError; e != "" && st.Subscription.State != "subscribed" {
		pending = append(pending, fmt.Sprintf("mesos framework %s (%s): %s", st.Subscription.State, st.Master, e))
	}
	return launched, pending
}
