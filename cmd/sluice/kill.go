package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/spf13/cobra"
)

func newKillCmd(a *app) *cobra.Command {
	var purge bool
	cmd := &cobra.Command{
		Use:   "kill NAME",
		Short: "Stop an operator and remove it from the topology",
		Long: `Kill stops every instance of an operator and removes it from the topology.
Its state stays in the nodes' databases, so deploying it again continues
from it, unless --purge deletes it too.`,
		Example: "  sluice kill count\n  sluice kill count --purge",
		Args:    cobra.ExactArgs(1),
		RunE: runE(func(ctx context.Context, args []string) error {
			name := args[0]
			if err := checkName(name); err != nil {
				return err
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			var q url.Values
			if purge {
				q = url.Values{"purge": {"1"}}
			}
			resp, raw, err := c.change(ctx, http.MethodDelete, operatorPath(name), q, nil)
			if err != nil {
				return fmt.Errorf("kill %s: %w", name, err)
			}
			if a.json {
				return printJSON(a.stdout, raw)
			}
			what := "killed " + name
			if purge {
				what += " and purged its state"
			}
			_, err = fmt.Fprintf(a.stdout, "%s, topology version %d\n", what, resp.Version)
			return err
		}),
	}
	cmd.Flags().BoolVar(&purge, "purge", false, "delete the operator's state too")
	return cmd
}
