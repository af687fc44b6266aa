package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/internal/core"
)

func newDescribeCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "describe NAME",
		Short: "Show an operator in detail",
		Long: `Describe shows a deployed operator: its settings, inputs with their routing,
outputs, resources, why it is pending if it is, and where every instance
runs (placement) with its state, key groups, counters and last error.`,
		Example: "  sluice describe count",
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
			var op api.OperatorView
			raw, err := c.getJSON(ctx, operatorPath(name), nil, &op)
			if err != nil {
				return err
			}
			if a.json {
				return printJSON(a.stdout, raw)
			}
			return writeOperator(a.stdout, op)
		}),
	}
}

// writeOperator writes describe's view of op.
func writeOperator(w io.Writer, op api.OperatorView) error {
	t := newTable(w)
	field := func(name, value string) { row(t, name+":", value) }
	field("Name", op.Name)
	field("Kind", op.Kind)
	if op.Runtime != "" {
		field("Runtime", op.Runtime)
		field("Module", op.Module)
	}
	field("Executable", op.Executable)
	field("State", op.State)
	field("Pending", op.Pending)
	field("Instances", fmt.Sprint(op.Instances))
	field("Key groups", fmt.Sprint(op.KeyGroups))
	field("Epoch", fmt.Sprint(op.Epoch))
	field("Deployed", timestamp(op.DeployedAt))
	field("Resources", resources(op))
	field("Autoscale", autoscaleSettings(op.Autoscale))
	field("Dead-letter stream", core.DeadLetterStream(op.Name))
	if err := t.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(w, "Inputs:")
	if len(op.Inputs) == 0 {
		fmt.Fprintln(w, "  none (a source)")
	} else {
		err := writeIndented(w, func(t io.Writer) {
			row(t, "STREAM", "ROUTING")
			for _, in := range op.Inputs {
				row(t, in.Stream, routingName(in.Routing))
			}
		})
		if err != nil {
			return err
		}
	}
	fmt.Fprintln(w, "Outputs:")
	if len(op.Outputs) == 0 {
		fmt.Fprintln(w, "  none")
	}
	for _, s := range op.Outputs {
		fmt.Fprintf(w, "  %s\n", s)
	}

	fmt.Fprintln(w, "Placement:")
	if len(op.Placement) == 0 {
		_, err := fmt.Fprintln(w, "  none")
		return err
	}
	return writeIndented(w, func(t io.Writer) {
		row(t, "INDEX", "NODE", "STATE", "KEY GROUPS", "PROCESSED", "PRODUCED", "RESTARTS", "DEAD LETTERS", "LAST ERROR")
		for _, in := range op.Placement {
			row(t, fmt.Sprint(in.Index), in.Node, in.State, groupRange(in.FirstGroup, in.EndGroup),
				fmt.Sprint(in.Processed), fmt.Sprint(in.Produced), fmt.Sprint(in.Restarts), fmt.Sprint(in.DeadLetters), in.LastError)
		}
	})
}

// autoscaleSettings shows the autoscaler's settings with their defaults:
// "1–16 instances at 70% utilization, down after 5m0s, cool-down 1m0s
// (dry run)", or "off".
func autoscaleSettings(a *core.AutoscaleSpec) string {
	if a == nil {
		return "off"
	}
	d := a.WithDefaults(0)
	max := "key groups"
	if a.Max > 0 {
		max = fmt.Sprint(a.Max)
	}
	s := fmt.Sprintf("%d–%s instances at %.0f%% utilization, down after %v, cool-down %v", d.Min, max, 100*d.TargetUtilization, d.ScaleDownAfter, d.CoolDown)
	if a.DryRun {
		s += " (dry run: recommends only)"
	}
	return s
}

// resources shows what a launcher gives the operator's processes: "cpus
// 0.5, mem 256 MB, disk 1024 MB, retries 3", leaving out what is not set.
func resources(op api.OperatorView) string {
	var parts []string
	if op.CPUs != 0 {
		parts = append(parts, fmt.Sprintf("cpus %v", op.CPUs))
	}
	if op.Mem != 0 {
		parts = append(parts, fmt.Sprintf("mem %v MB", op.Mem))
	}
	if op.Disk != 0 {
		parts = append(parts, fmt.Sprintf("disk %v MB", op.Disk))
	}
	if op.Retries != 0 {
		parts = append(parts, fmt.Sprintf("retries %d", op.Retries))
	}
	return strings.Join(parts, ", ")
}
