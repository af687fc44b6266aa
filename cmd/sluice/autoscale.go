package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/control/api"
)

func newAutoscaleCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "autoscale",
		Short: "Show the autoscaler's recommendations",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "status",
		Short: "Show the latest autoscaling decision of every autoscaled operator",
		Long: `Status shows, for every operator deployed with autoscale settings, the
autoscaler's latest decision: the instances now and recommended, whether
the change is due (and was applied, or not in dry-run), and why, with the
measured input rate, true rate per instance and utilization; and the node
recommendation: the nodes the operators' instances need at a node's
capacity (reported only; under Mesos the framework grows and shrinks its
autoscaled pool from the same demand).`,
		Example: "  sluice autoscale status",
		Args:    cobra.NoArgs,
		RunE: runE(func(ctx context.Context, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			var st api.AutoscaleStatus
			raw, err := c.getJSON(ctx, "/v1/autoscale", nil, &st)
			if err != nil {
				return err
			}
			if a.json {
				return printJSON(a.stdout, raw)
			}
			if n := st.Nodes; n != nil {
				if _, err := fmt.Fprintf(a.stdout, "nodes: %d now, %d recommended: %s (%d per node of %g cpus)\n", n.Members, n.Recommended, n.Reason, n.PerNode, n.CPUs); err != nil {
					return err
				}
			}
			if len(st.Operators) == 0 {
				_, err := fmt.Fprintln(a.stdout, "no autoscaling decision yet (no operator has autoscale settings, or too few samples)")
				return err
			}
			t := newTable(a.stdout)
			row(t, "OPERATOR", "NOW", "RECOMMENDED", "ACTION", "INPUT/S", "TRUE RATE/S", "UTILIZATION", "REASON")
			for _, d := range st.Operators {
				action := "none"
				switch {
				case d.Applied:
					action = "scaled"
				case d.Scale && d.DryRun:
					action = "dry run"
				case d.Scale:
					action = "due"
				case d.Skewed:
					action = "skewed"
				}
				row(t, d.Operator, fmt.Sprint(d.Current), fmt.Sprint(d.Recommended), action, fmt.Sprintf("%.0f", d.Inputs.InputRate),
					fmt.Sprintf("%.0f", d.Inputs.TrueRate), fmt.Sprintf("%.0f%%", 100*d.Inputs.Utilization), d.Reason)
			}
			return t.Flush()
		}),
	})
	return cmd
}
