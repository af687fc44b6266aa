package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/control/api"
)

func newCheckpointsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "checkpoints",
		Short: "List the complete checkpoints kept in the store",
		Long: `Checkpoints lists the complete checkpoints of an exactly-once cluster, newest
first, as kept in its checkpoint store: id, when it completed, how long it
took, the bytes it uploaded (files already in the store are not sent
again), the size of everything it references, and its instances. A
savepoint (taken by sluice checkpoint) is kept until deleted by hand;
the others go once newer ones complete (the node's -checkpoints-kept).`,
		Example: "  sluice checkpoints\n  sluice checkpoints describe 1796150508194721053",
		Args:    cobra.NoArgs,
		RunE: runE(func(ctx context.Context, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			var list []api.CheckpointView
			raw, err := c.getJSON(ctx, "/v1/checkpoints", nil, &list)
			if err != nil {
				return err
			}
			if a.json {
				return printJSON(a.stdout, raw)
			}
			if len(list) == 0 {
				_, err := fmt.Fprintln(a.stdout, "no complete checkpoint yet")
				return err
			}
			t := newTable(a.stdout)
			row(t, "ID", "KIND", "COMPLETED", "DURATION", "UPLOADED", "SIZE", "INSTANCES")
			for _, m := range list {
				row(t, fmt.Sprint(m.ID), kind(m.Savepoint), timestamp(m.Completed),
					millis(m.DurationMS), bytesOf(m.Uploaded), bytesOf(m.Size), fmt.Sprint(m.Instances))
			}
			return t.Flush()
		}),
	}
	cmd.AddCommand(newCheckpointDescribeCmd(a))
	return cmd
}

func newCheckpointDescribeCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "describe ID",
		Short: "Show a checkpoint in detail",
		Long: `Describe shows a complete checkpoint: when it was taken, its sizes, and each
node's part with the key groups and estimated state size of every operator
instance in it. Source positions and sinks' pending commits are operator
state, inside those key groups.`,
		Example: "  sluice checkpoints describe 1796150508194721053",
		Args:    cobra.ExactArgs(1),
		RunE: runE(func(ctx context.Context, args []string) error {
			id, err := strconv.ParseUint(args[0], 10, 64)
			if err != nil {
				return &usageError{fmt.Errorf("checkpoint id %q: want a number, as sluice checkpoints lists", args[0])}
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			var d api.CheckpointDetail
			raw, err := c.getJSON(ctx, "/v1/checkpoints/"+strconv.FormatUint(id, 10), nil, &d)
			if err != nil {
				return err
			}
			if a.json {
				return printJSON(a.stdout, raw)
			}
			return writeCheckpoint(a.stdout, d)
		}),
	}
}

func newCheckpointCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "checkpoint",
		Short: "Take a checkpoint now (a savepoint)",
		Long: `Checkpoint takes a checkpoint of the whole cluster now and waits until it is
complete: a savepoint, which the store keeps until deleted by hand (the
node's -checkpoints-kept does not count it). Any node takes the request;
one that does not coordinate checkpoints forwards it to the one that does.
A node started with -restore-from ID starts the cluster from it. A
checkpoint that fails (the cluster changing meanwhile, say) is tried
again, up to five times. Needs the role admin.`,
		Example: "  sluice checkpoint\n  sluice checkpoint --timeout 5m",
		Args:    cobra.NoArgs,
		RunE: runE(func(ctx context.Context, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			raw, err := c.do(ctx, http.MethodPost, "/v1/checkpoints", nil, nil)
			if err != nil {
				return fmt.Errorf("checkpoint: %w", err)
			}
			if a.json {
				return printJSON(a.stdout, raw)
			}
			var m api.CheckpointView
			if err := json.Unmarshal(raw, &m); err != nil {
				return fmt.Errorf("checkpoint: the node answered malformed JSON: %w", err)
			}
			_, err = fmt.Fprintf(a.stdout, "savepoint %d complete: took %s, uploaded %s, size %s, %d instances\n",
				m.ID, millis(m.DurationMS), bytesOf(m.Uploaded), bytesOf(m.Size), m.Instances)
			return err
		}),
	}
}

// writeCheckpoint writes describe's view of a checkpoint.
func writeCheckpoint(w io.Writer, d api.CheckpointDetail) error {
	t := newTable(w)
	field := func(name, value string) { row(t, name+":", value) }
	field("ID", fmt.Sprint(d.ID))
	field("Kind", kind(d.Savepoint))
	field("Started", timestamp(d.Started))
	field("Completed", timestamp(d.Completed))
	field("Duration", millis(d.DurationMS))
	field("Uploaded", bytesOf(d.Uploaded))
	field("Size", bytesOf(d.Size))
	field("Topology version", fmt.Sprint(d.TopologyVersion))
	field("Instances", fmt.Sprint(d.Instances))
	if err := t.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "Nodes:")
	if len(d.Nodes) == 0 {
		fmt.Fprintln(w, "  none")
	}
	err := writeIndented(w, func(t io.Writer) {
		if len(d.Nodes) == 0 {
			return
		}
		row(t, "NODE", "DATABASE", "FILES", "SIZE", "UPLOADED")
		for _, n := range d.Nodes {
			row(t, n.Node, n.DB, fmt.Sprint(n.Files), bytesOf(n.Size), bytesOf(n.Uploaded))
		}
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "Instances:")
	err = writeIndented(w, func(t io.Writer) {
		row(t, "OPERATOR", "INDEX", "EPOCH", "NODE", "KEY GROUPS", "STATE")
		for _, n := range d.Nodes {
			for _, in := range n.Instances {
				row(t, in.Operator, fmt.Sprint(in.Index), fmt.Sprint(in.Epoch), n.Node, groupRange(in.FirstGroup, in.EndGroup), bytesOf(in.StateBytes))
			}
		}
	})
	if err != nil {
		return err
	}
	if d.Note != "" {
		_, err = fmt.Fprintf(w, "Note: %s\n", d.Note)
	}
	return err
}

// writeCheckpointStatus writes the checkpoint section of status.
func writeCheckpointStatus(w io.Writer, c *api.CheckpointStatus) error {
	fmt.Fprintf(w, "\nCHECKPOINTS\n")
	t := newTable(w)
	field := func(name, value string) { row(t, name+":", value) }
	field("Coordinator", c.Coordinator)
	if c.Error != "" {
		field("Error", c.Error)
		return t.Flush()
	}
	if c.Last == 0 {
		field("Last", "none yet")
	} else {
		last := fmt.Sprintf("%d, %s ago", c.Last, age(time.Duration(c.LastAgeMS)*time.Millisecond))
		if c.LastSavepoint {
			last += " (savepoint)"
		}
		field("Last", last)
	}
	if c.LastDurationMS != 0 || c.LastSize != 0 {
		field("Took", fmt.Sprintf("%s, uploaded %s, size %s", millis(c.LastDurationMS), bytesOf(c.LastUploaded), bytesOf(c.LastSize)))
	}
	field("Completed", fmt.Sprint(c.Completed))
	field("Failed", fmt.Sprintf("%d (%d in a row)", c.Failed, c.ConsecutiveFailures))
	if c.LastError != "" {
		field("Last failure", fmt.Sprintf("%s: %s", timestamp(c.LastFailure), c.LastError))
	}
	if c.InProgress != 0 {
		field("In progress", fmt.Sprint(c.InProgress))
	}
	if c.Rollbacks != 0 {
		field("Rollbacks", fmt.Sprint(c.Rollbacks))
	}
	return t.Flush()
}

// kind names a checkpoint's kind.
func kind(savepoint bool) string {
	if savepoint {
		return "savepoint"
	}
	return "checkpoint"
}

// millis shows a duration in milliseconds, rounded for reading.
func millis(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	if d >= time.Second {
		d = d.Round(10 * time.Millisecond)
	}
	return d.String()
}

// age shows how long ago something happened, to the second.
func age(d time.Duration) string {
	if d < time.Second {
		return "<1s"
	}
	return d.Round(time.Second).String()
}

// bytesOf shows a byte count in B, kB, MB or GB (powers of 1000).
func bytesOf(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "kMGTPE"[exp])
}
