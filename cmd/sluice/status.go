package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/control/api"
)

func newStatusCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show the cluster: nodes, operators, what is pending, launched processes, checkpoints",
		Long: `Status shows the cluster as the node at --addr sees it: every node with its
health, every operator (as in ls), what is pending and why, the
processes launchers (local or Mesos) run for operators, and, when the
cluster is exactly-once, its checkpoints: the newest complete one, its age,
duration and sizes, how many completed and failed (in a row, since the
last success) and why the last one failed.`,
		Args: cobra.NoArgs,
		RunE: runE(func(ctx context.Context, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			var st api.ClusterStatus
			raw, err := c.getJSON(ctx, "/v1/status", nil, &st)
			if err != nil {
				return err
			}
			if a.json {
				return printJSON(a.stdout, raw)
			}
			return writeStatus(a.stdout, st)
		}),
	}
}

// writeStatus writes status's view of the cluster.
func writeStatus(w io.Writer, st api.ClusterStatus) error {
	fmt.Fprintf(w, "Node %s, topology version %d\n", st.Node, st.TopologyVersion)

	fmt.Fprintf(w, "\nNODES\n")
	if len(st.Nodes) == 0 {
		fmt.Fprintln(w, "none")
	} else {
		t := newTable(w)
		row(t, "ID", "ADDRESS", "HTTP", "KINDS", "VERSION", "HEALTHY", "INSTANCES", "ERROR")
		for _, n := range st.Nodes {
			row(t, n.ID, n.Address, n.HTTPAddr, strings.Join(n.Kinds, ","), n.Version, yesNo(n.Healthy), fmt.Sprint(n.Instances), n.Error)
		}
		if err := t.Flush(); err != nil {
			return err
		}
	}

	fmt.Fprintf(w, "\nOPERATORS\n")
	if len(st.Operators) == 0 {
		fmt.Fprintln(w, "none")
	} else if err := writeOperators(w, st.Operators); err != nil {
		return err
	}

	fmt.Fprintf(w, "\nPENDING\n")
	if len(st.Pending) == 0 {
		fmt.Fprintln(w, "none")
	}
	for _, p := range st.Pending {
		fmt.Fprintf(w, "%s\n", cell(p))
	}

	fmt.Fprintf(w, "\nLAUNCHER\n")
	if len(st.Launcher) == 0 {
		fmt.Fprintln(w, "none")
	} else {
		t := newTable(w)
		row(t, "OPERATOR", "ID", "WHERE", "STATE", "RESTARTS", "MESSAGE")
		for _, l := range st.Launcher {
			row(t, l.Operator, l.ID, l.Where, l.State, fmt.Sprint(l.Restarts), l.Message)
		}
		if err := t.Flush(); err != nil {
			return err
		}
	}
	if st.Checkpoints == nil {
		return nil
	}
	return writeCheckpointStatus(w, st.Checkpoints)
}
