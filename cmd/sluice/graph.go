package main

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"github.com/spf13/cobra"
)

func newGraphCmd(a *app) *cobra.Command {
	var dot bool
	cmd := &cobra.Command{
		Use:   "graph",
		Short: "Show the stream graph",
		Long: `Graph shows which operators produce to and read from each stream, as text,
or with --dot as Graphviz DOT, both drawn by the node. With --json it
prints the streams (GET /v1/streams) instead: each with its producers, its
consumers and their routing, and whether it dangles.`,
		Example: "  sluice graph\n  sluice graph --dot | dot -Tsvg > graph.svg",
		Args:    cobra.NoArgs,
		RunE: runE(func(ctx context.Context, _ []string) error {
			if dot && a.json {
				return &usageError{errors.New("--dot and --json cannot be used together")}
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			if a.json {
				raw, err := c.do(ctx, http.MethodGet, "/v1/streams", nil, nil)
				if err != nil {
					return err
				}
				return printJSON(a.stdout, raw)
			}
			var q url.Values
			if dot {
				q = url.Values{"format": {"dot"}}
			}
			text, err := c.do(ctx, http.MethodGet, "/v1/graph", q, nil)
			if err != nil {
				return err
			}
			if len(text) > 0 && text[len(text)-1] != '\n' {
				text = append(text, '\n')
			}
			_, err = a.stdout.Write(text)
			return err
		}),
	}
	cmd.Flags().BoolVar(&dot, "dot", false, "print Graphviz DOT (render with: dot -Tsvg)")
	return cmd
}
