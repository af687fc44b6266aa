package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/control/api"
)

func newDrainCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "drain",
		Short: "Move every instance off the node this command talks to",
		Long: `Drain empties the node given by --addr while it keeps running: its
operator instances move to the other nodes of the cluster, live, with their
state (as when a node stops and leaves), and it stays a member nothing is
placed on until it stops. It waits for the drain within --timeout; a drain
still going on then goes on, and running drain again waits for it. A node
outside a cluster, or running an operator whose kind no other node hosts,
is not drained (exit code 1, saying why). The Mesos framework drains a node
so before shrinking its autoscaled pool. Needs the role admin.`,
		Example: "  sluice drain --addr 10.0.0.7:8080\n  sluice drain --addr 10.0.0.7:8080 --timeout 5m",
		Args:    cobra.NoArgs,
		RunE: runE(func(ctx context.Context, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			var q url.Values
			if a.timeout > 2*time.Second {
				// The node answers before the request's own limit.
				q = url.Values{"timeout": {(a.timeout - time.Second).String()}}
			}
			raw, err := c.do(ctx, http.MethodPost, "/v1/node/drain", q, nil)
			var ae *apiError
			switch {
			case errors.As(err, &ae) && ae.Status == http.StatusConflict:
				// Not a topology conflict (exit code 3): the node cannot
				// be drained.
				return fmt.Errorf("drain: %s", ae.Error())
			case errors.As(err, &ae) && ae.Status == http.StatusServiceUnavailable:
				return fmt.Errorf("drain: %s (run it again, or with a longer --timeout, to wait for it)", ae.Error())
			case err != nil:
				return fmt.Errorf("drain: %w", err)
			}
			if a.json {
				return printJSON(a.stdout, raw)
			}
			var d api.DrainStatus
			if err := json.Unmarshal(raw, &d); err != nil {
				return fmt.Errorf("drain: the node answered malformed JSON: %w", err)
			}
			_, err = fmt.Fprintf(a.stdout, "node %s drained: its instances run on the other nodes\n", d.Node)
			return err
		}),
	}
}
