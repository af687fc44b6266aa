package control

import (
	"context"
	"errors"
	"fmt"
	"time"

	consul "github.com/hashicorp/consul/api"

	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/mesos/mesosstatus"
)

// ShowMesos makes the cluster status include the Mesos framework's tasks
// and pending reasons, as its leader publishes them in Consul.
func (s *Server) ShowMesos(consulAddr, cluster string) error {
	cfg := consul.DefaultConfig()
	cfg.Address = consulAddr
	c, err := consul.NewClient(cfg)
	if err != nil {
		return fmt.Errorf("control: consul client for the Mesos status: %w", err)
	}
	s.mesos = func(ctx context.Context) ([]api.LaunchedView, []string) {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		st, err := mesosstatus.ReadStatus(ctx, c, cluster)
		if errors.Is(err, mesosstatus.ErrNoStatus) {
			return nil, nil // no Mesos framework in this cluster
		}
		if err != nil {
			return nil, []string{"Mesos framework status unavailable: " + err.Error()}
		}
		return mesosViews(st)
	}
	return nil
}

// mesosViews turns the framework's status into launcher entries and
// pending reasons.
func mesosViews(st mesosstatus.Status) ([]api.LaunchedView, []string) {
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
