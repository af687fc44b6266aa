package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/manifest"
)

func newDeployCmd(a *app) *cobra.Command {
	var files []string
	cmd := &cobra.Command{
		Use:   "deploy -f FILE [-f FILE]...",
		Short: "Deploy or update operators from manifest files",
		Long: `Deploy reads the manifests in each FILE (YAML or JSON; one manifest, several
separated by ---, or a list; - reads standard input), checks them all, and
only if every one is valid deploys them all as one change of the topology:
an operator that does not exist is created, one that does is updated to the
manifest, and every node starts the whole pipeline at once (no operator
runs before the readers of its output are in place).

Problems in the files are printed one per line, naming the field and what
is allowed, and nothing is deployed. A deploy that loses a race with
another change is not applied and exits with code 3.`,
		Example: `  sluice deploy -f count.yaml
  sluice deploy -f pipeline.yaml -f sinks.json
  generate-manifests | sluice deploy -f -`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("deploy takes no arguments, got %q: give each manifest file with -f, as in: sluice deploy -f count.yaml", args)
			}
			return nil
		},
		RunE: runE(func(ctx context.Context, _ []string) error { return a.deploy(ctx, files) }),
	}
	cmd.Flags().StringArrayVarP(&files, "filename", "f", nil, "manifest file, YAML or JSON (- for standard input); repeatable")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

// source is a manifest and where it was read.
type source struct {
	file  string
	index int // 1-based position in the file
	m     api.Manifest
}

func (s source) String() string {
	return fmt.Sprintf("%s: manifest %d (%q)", s.file, s.index, s.m.Name)
}

func (a *app) deploy(ctx context.Context, files []string) error {
	c, err := a.client()
	if err != nil {
		return err
	}
	srcs, err := a.readManifests(files)
	if err != nil {
		return err
	}
	if len(srcs) > 1 {
		return a.deployAll(ctx, c, srcs)
	}
	for _, s := range srcs {
		resp, raw, err := c.change(ctx, http.MethodPost, "/v1/operators", nil, api.DeployRequest{Manifest: s.m})
		if err != nil {
			return fmt.Errorf("deploy %s: %w", s.m.Name, err)
		}
		if a.json {
			if err := printJSON(a.stdout, raw); err != nil {
				return err
			}
			continue
		}
		what := "updated"
		if resp.Created {
			what = "created"
		}
		fmt.Fprintf(a.stdout, "deployed %s (%s), topology version %d\n", s.m.Name, what, resp.Version)
	}
	return nil
}

// deployAll deploys several manifests as one topology change.
func (a *app) deployAll(ctx context.Context, c *client, srcs []source) error {
	req := api.DeploymentRequest{Manifests: make([]api.Manifest, len(srcs))}
	for i, s := range srcs {
		req.Manifests[i] = s.m
	}
	raw, err := c.do(ctx, http.MethodPost, "/v1/deployments", nil, req)
	if err != nil {
		return fmt.Errorf("deploy %d operators: %w", len(srcs), err)
	}
	if a.json {
		return printJSON(a.stdout, raw)
	}
	var resp api.DeploymentResponse
	if err := json.Unmarshal(raw, &resp); err != nil {
		return fmt.Errorf("deploy %d operators: decode the answer: %w", len(srcs), err)
	}
	for i, s := range srcs {
		what := "updated"
		if i < len(resp.Created) && resp.Created[i] {
			what = "created"
		}
		fmt.Fprintf(a.stdout, "deployed %s (%s)\n", s.m.Name, what)
	}
	fmt.Fprintf(a.stdout, "%d operators deployed as one change, topology version %d\n", len(srcs), resp.Version)
	return nil
}

// readManifests parses and validates every file, and returns every
// manifest, or the errors.Join of every problem found, file by file.
func (a *app) readManifests(files []string) ([]source, error) {
	var srcs []source
	var errs []error
	first := map[string]source{} // by name: where it is first deployed
	for _, f := range files {
		data, name, err := a.readFile(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ms, err := manifest.Parse(data)
		var pe *manifest.ParseError
		if errors.As(err, &pe) {
			errs = append(errs, &listError{name + " is not a valid manifest file:", pe.Lines()})
			continue
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		for i, m := range ms {
			s := source{file: name, index: i + 1, m: m}
			srcs = append(srcs, s)
			var lines []string
			if f, dup := first[m.Name]; dup && m.Name != "" {
				lines = append(lines, fmt.Sprintf("name: %q is also the name of manifest %d in %s; deploy each operator once", m.Name, f.index, f.file))
			} else if !dup {
				first[m.Name] = s
			}
			var ve *manifest.ValidationError
			if errors.As(manifest.Validate(m), &ve) {
				lines = append(lines, ve.Lines()...)
			}
			if len(lines) > 0 {
				errs = append(errs, &listError{s.String() + " is invalid:", lines})
			}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return srcs, nil
}

// readFile reads a manifest file, or standard input for "-".
func (a *app) readFile(f string) (data []byte, name string, err error) {
	if f == "-" {
		data, err = io.ReadAll(a.stdin)
		if err != nil {
			return nil, "", fmt.Errorf("read standard input: %w", err)
		}
		return data, "<stdin>", nil
	}
	data, err = os.ReadFile(f)
	return data, f, err
}
