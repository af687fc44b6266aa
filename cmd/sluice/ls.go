package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/control/api"
)

func newLsCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List the deployed operators",
		Long: `Ls lists the deployed operators: name, kind, instances, state (running,
starting, pending, degraded or unknown), the nodes running their instances
("n1×2 n2×1": two on n1, one on n2) and why any are pending.`,
		Args: cobra.NoArgs,
		RunE: runE(func(ctx context.Context, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			var ops []api.OperatorView
			raw, err := c.getJSON(ctx, "/v1/operators", nil, &ops)
			if err != nil {
				return err
			}
			if a.json {
				return printJSON(a.stdout, raw)
			}
			if len(ops) == 0 {
				_, err := fmt.Fprintln(a.stdout, "no operators deployed")
				return err
			}
			return writeOperators(a.stdout, ops)
		}),
	}
}
