package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/internal/core"
)

// printJSON writes an answer of the API as it is, indented.
func printJSON(w io.Writer, raw []byte) error {
	var b bytes.Buffer
	if err := json.Indent(&b, bytes.TrimSpace(raw), "", "  "); err != nil {
		return fmt.Errorf("the node answered malformed JSON: %w", err)
	}
	b.WriteByte('\n')
	_, err := w.Write(b.Bytes())
	return err
}

// newTable returns a tabwriter for aligned columns; Flush it when done.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
}

// writeIndented writes the table that fill writes, each line indented by
// two spaces.
func writeIndented(w io.Writer, fill func(t io.Writer)) error {
	var b bytes.Buffer
	t := newTable(&b)
	fill(t)
	if err := t.Flush(); err != nil {
		return err
	}
	for _, line := range strings.SplitAfter(b.String(), "\n") {
		if line != "" {
			if _, err := io.WriteString(w, "  "+line); err != nil {
				return err
			}
		}
	}
	return nil
}

// row writes cells as one line of a table.
func row(w io.Writer, cells ...string) {
	for i, c := range cells {
		cells[i] = cell(c)
	}
	fmt.Fprintln(w, strings.Join(cells, "\t"))
}

// cell makes s fit in a table cell: one line, no tabs, "-" for nothing.
func cell(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return "-"
	}
	return s
}

// writeOperators writes the operators table of ls and status.
func writeOperators(w io.Writer, ops []api.OperatorView) error {
	ops = slices.Clone(ops)
	slices.SortStableFunc(ops, func(a, b api.OperatorView) int { return cmp.Compare(a.Name, b.Name) })
	t := newTable(w)
	row(t, "NAME", "KIND", "INSTANCES", "STATE", "NODES", "PENDING")
	for _, op := range ops {
		row(t, op.Name, op.Kind, fmt.Sprint(op.Instances), op.State, placementSummary(op.Placement), op.Pending)
	}
	return t.Flush()
}

// placementSummary counts instances per node: "n1×2 n2×1", nodes in
// order, instances not placed last as "unplaced×N".
func placementSummary(p []api.InstanceView) string {
	count := map[string]int{}
	var nodes []string
	for _, in := range p {
		if count[in.Node] == 0 && in.Node != "" {
			nodes = append(nodes, in.Node)
		}
		count[in.Node]++
	}
	slices.Sort(nodes)
	var parts []string
	for _, n := range nodes {
		parts = append(parts, fmt.Sprintf("%s×%d", n, count[n]))
	}
	if n := count[""]; n > 0 {
		parts = append(parts, fmt.Sprintf("unplaced×%d", n))
	}
	return strings.Join(parts, " ")
}

// groupRange shows the half-open key-group range [first, end): "0-85",
// "7", or "none".
func groupRange(first, end int) string {
	switch {
	case end <= first:
		return "none"
	case end == first+1:
		return fmt.Sprint(first)
	}
	return fmt.Sprintf("%d-%d", first, end-1)
}

// routingName shows a routing; the zero value means shuffle.
func routingName(r core.Routing) string {
	if r == 0 {
		return core.Shuffle.String()
	}
	return r.String()
}

// timestamp shows t in UTC, or "-" for the zero time.
func timestamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// yesNo shows a bool.
func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
