package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
)

// Exit codes of the sluice command.
const (
	exitOK       = 0
	exitError    = 1 // the command failed: bad manifest, server error, node unreachable
	exitUsage    = 2 // bad command line: unknown command or flag, wrong arguments
	exitConflict = 3 // the server answered 409: the topology changed concurrently
)

// defaultAddr is the control API address used when neither --addr nor
// $SLUICE_ADDR is set.
const defaultAddr = "http://127.0.0.1:7070"

// app is what the commands share: the global flags, the environment and
// where output goes. One app serves one run.
type app struct {
	// Global flags.
	addr    string
	json    bool
	timeout time.Duration
	// Credentials (see credentials).
	token, tokenFile string
	ca, cert, key    string

	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
}

// commands lists the constructors of sluice's subcommands (help lists them
// sorted by name). A new verb is a file with its newXxxCmd and a line here.
var commands = []func(*app) *cobra.Command{
	newDeployCmd,
	newScaleCmd,
	newKillCmd,
	newLsCmd,
	newDescribeCmd,
	newGraphCmd,
	newTailCmd,
	newStatusCmd,
	newCheckpointsCmd,
	newCheckpointCmd,
	newCertsCmd,
	newAutoscaleCmd,
	newDrainCmd,
}

// newRootCmd builds the sluice command tree for a.
func newRootCmd(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "sluice",
		Short: "Deploy, scale, kill and inspect the operators of a Sluice cluster",
		Long: `sluice talks to the control API of any node of a Sluice cluster to deploy,
scale, kill and inspect operators while the cluster runs.

The node is given by --addr, else $SLUICE_ADDR, else ` + defaultAddr + `.
A node that requires authentication takes a token (--token-file, --token,
$SLUICE_TOKEN_FILE or $SLUICE_TOKEN) or a client certificate (--cert and
--key); over HTTPS, --ca names the CA that signed the node's certificate.
Reading needs the role read, changes the role admin. See docs/security.md.

Exit codes: 0 success, 1 error, 2 bad usage, 3 conflict (the topology
changed concurrently: run the command again).`,
		SilenceErrors: true, // run prints errors, with the exit code's wording
		SilenceUsage:  true,
	}
	f := root.PersistentFlags()
	f.StringVar(&a.addr, "addr", "", "control API of any node, host:port or URL (default $SLUICE_ADDR, else "+defaultAddr+")")
	f.BoolVar(&a.json, "json", false, "print the API's JSON instead of tables")
	f.DurationVar(&a.timeout, "timeout", 10*time.Second, "time limit for each request to the node (0: none)")
	f.StringVar(&a.tokenFile, "token-file", "", "file holding the token to send (default $SLUICE_TOKEN_FILE)")
	f.StringVar(&a.token, "token", "", "token to send, visible to other users in the process list: prefer --token-file (default $SLUICE_TOKEN)")
	f.StringVar(&a.ca, "ca", "", "PEM CA bundle that signed the node's certificate, for https:// addresses (default $SLUICE_CA)")
	f.StringVar(&a.cert, "cert", "", "PEM client certificate to present (default $SLUICE_CERT)")
	f.StringVar(&a.key, "key", "", "PEM private key of --cert (default $SLUICE_KEY)")
	for _, newCmd := range commands {
		root.AddCommand(newCmd(a))
	}
	return root
}

// run runs the sluice command line args (without the program name),
// writing to stdout and stderr, and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	return runApp(&app{stdin: os.Stdin, stdout: stdout, stderr: stderr, getenv: os.Getenv}, args)
}

// runApp is run with the standard input and environment taken from a.
func runApp(a *app, args []string) int {
	root := newRootCmd(a)
	root.SetArgs(args)
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	cmd, err := root.ExecuteContextC(context.Background())
	if err == nil {
		return exitOK
	}
	var ce *commandError
	if !errors.As(err, &ce) {
		// Cobra's own errors: unknown command or flag, wrong number of
		// arguments, missing required flag.
		err = &usageError{err}
	} else {
		err = ce.err
	}
	printError(a.stderr, err)
	code := exitCode(err)
	if code == exitUsage && cmd != nil {
		fmt.Fprintf(a.stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
	return code
}

// commandError marks an error returned by a command's own code, as
// opposed to one from cobra's parsing of the command line.
type commandError struct{ err error }

func (e *commandError) Error() string { return e.err.Error() }
func (e *commandError) Unwrap() error { return e.err }

// runE adapts f to cobra's RunE, marking its errors as the command's own.
func runE(f func(ctx context.Context, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := f(cmd.Context(), args); err != nil {
			return &commandError{err}
		}
		return nil
	}
}

// client returns a client of the node the global flags name.
func (a *app) client() (*client, error) {
	addr, from := a.addr, "--addr"
	if addr == "" {
		addr, from = a.getenv("SLUICE_ADDR"), "$SLUICE_ADDR"
	}
	if addr == "" {
		addr, from = defaultAddr, "the default address"
	}
	if a.timeout < 0 {
		return nil, &usageError{fmt.Errorf("--timeout must be ≥ 0, got %v", a.timeout)}
	}
	cr, err := a.credentials()
	if err != nil {
		return nil, err
	}
	c, err := newClient(addr, a.timeout, cr)
	var ue *usageError
	switch {
	case errors.As(err, &ue):
		return nil, err
	case err != nil:
		return nil, &usageError{fmt.Errorf("%s: %w", from, err)}
	}
	c.warn = a.stderr
	return c, nil
}
