package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/internal/core"
)

func newScaleCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "scale NAME INSTANCES",
		Short: "Change the number of instances of an operator",
		Long: `Scale sets the number of instances of a deployed operator. Its key groups
are spread over the new instances and their state moves with them.`,
		Example: "  sluice scale count 8",
		Args:    cobra.ExactArgs(2),
		RunE: runE(func(ctx context.Context, args []string) error {
			name := args[0]
			if err := checkName(name); err != nil {
				return err
			}
			n, err := strconv.Atoi(args[1])
			if err != nil || n < 0 {
				return &usageError{fmt.Errorf("INSTANCES must be a whole number, got %q", args[1])}
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			resp, raw, err := c.change(ctx, http.MethodPut, operatorPath(name)+"/instances", nil, api.ScaleRequest{Instances: n})
			if err != nil {
				return fmt.Errorf("scale %s: %w", name, err)
			}
			if a.json {
				return printJSON(a.stdout, raw)
			}
			_, err = fmt.Fprintf(a.stdout, "scaled %s to %d instances, topology version %d\n", name, resp.Operator.Instances, resp.Version)
			return err
		}),
	}
}

// checkName checks an operator name given on the command line.
func checkName(name string) error {
	if err := core.ValidName(name); err != nil {
		return &usageError{fmt.Errorf("bad operator name: %w", err)}
	}
	return nil
}
