package main

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/creds"
	"github.com/sluicehq/sluice/internal/core"
)

// certsFlags are the flags shared by the certs subcommands.
type certsFlags struct {
	dir   string
	valid string
	force bool
}

func (f *certsFlags) add(cmd *cobra.Command, valid string) {
	cmd.Flags().StringVar(&f.dir, "dir", ".", "directory of the CA's files and of the certificates written")
	cmd.Flags().StringVar(&f.valid, "valid", valid, "validity: a Go duration (8760h) or days (365d)")
	cmd.Flags().BoolVar(&f.force, "force", false, "replace existing files")
}

func newCertsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "certs",
		Short: "Make a development CA and certificates for nodes and clients",
		Long: `Certs makes what TLS between nodes and with the control API needs, for
development and small clusters: a CA, and certificates it signs for nodes
and for clients (ECDSA P-256). Keys are written with mode 0600.

  sluice certs ca --dir certs                                   # certs/ca.pem, certs/ca-key.pem
  sluice certs node n1 --dir certs --dns n1.example --ip 10.0.0.1  # certs/n1.pem, certs/n1-key.pem
  sluice certs client alice --dir certs                         # certs/alice.pem, certs/alice-key.pem

A node certificate's name is the node's identity (use the node id) and is
valid for the names and addresses given (the node name is one of them),
for serving and as a client of other nodes: give it to the node as
-control-cert/-control-key and as -node-cert/-node-key (mutual TLS between
nodes, with -node-ca). A client certificate's name
is what -control-cert-roles gives a role. Keep ca-key.pem off the nodes.
docs/security.md shows the same with openssl.`,
	}
	cmd.AddCommand(newCertsCACmd(a), newCertsIssueCmd(a, creds.NodeUsage), newCertsIssueCmd(a, creds.ClientUsage))
	return cmd
}

func newCertsCACmd(a *app) *cobra.Command {
	var f certsFlags
	var name string
	cmd := &cobra.Command{
		Use:   "ca",
		Short: "Make a CA: ca.pem and ca-key.pem",
		Args:  cobra.NoArgs,
		RunE: runE(func(context.Context, []string) error {
			valid, err := parseValidity(f.valid)
			if err != nil {
				return err
			}
			ca, err := creds.NewCA(name, valid)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(f.dir, 0o700); err != nil {
				return fmt.Errorf("--dir: %w", err)
			}
			cert, key := filepath.Join(f.dir, "ca.pem"), filepath.Join(f.dir, "ca-key.pem")
			if err := creds.WriteKeyPair(cert, ca.CertPEM, key, ca.KeyPEM, f.force); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "wrote %s (the CA bundle nodes and clients verify with) and %s (its key, mode 0600: keep it off the nodes), valid until %s\n",
				cert, key, ca.Cert.NotAfter.UTC().Format(time.RFC3339))
			return nil
		}),
	}
	f.add(cmd, "3650d")
	cmd.Flags().StringVar(&name, "name", "Sluice development CA", "the CA's name")
	return cmd
}

func newCertsIssueCmd(a *app, usage creds.Usage) *cobra.Command {
	var f certsFlags
	var dns []string
	var ips []net.IP
	cmd := &cobra.Command{
		Use:   usage.String() + " NAME",
		Short: "Make a " + usage.String() + " certificate signed by the CA in --dir: NAME.pem and NAME-key.pem",
		Args:  cobra.ExactArgs(1),
		RunE: runE(func(_ context.Context, args []string) error {
			name := args[0]
			if err := core.ValidName(name); err != nil || strings.Trim(name, ".") == "" {
				return &usageError{fmt.Errorf("NAME %q: want letters, digits, '-', '_' and '.', as a node id", name)}
			}
			valid, err := parseValidity(f.valid)
			if err != nil {
				return err
			}
			ca, err := creds.LoadAuthority(filepath.Join(f.dir, "ca.pem"), filepath.Join(f.dir, "ca-key.pem"))
			if err != nil {
				return fmt.Errorf("%w (make one with: sluice certs ca --dir %s)", err, f.dir)
			}
			req := creds.Request{Name: name, Usage: usage, Valid: valid, IPs: ips}
			if usage == creds.NodeUsage {
				req.DNSNames = append([]string{name}, dns...)
			}
			certPEM, keyPEM, err := ca.Issue(req)
			if err != nil {
				return err
			}
			cert, key := filepath.Join(f.dir, name+".pem"), filepath.Join(f.dir, name+"-key.pem")
			if err := creds.WriteKeyPair(cert, certPEM, key, keyPEM, f.force); err != nil {
				return err
			}
			names := append([]string(nil), req.DNSNames...)
			for _, ip := range ips {
				names = append(names, ip.String())
			}
			fmt.Fprintf(a.stdout, "wrote %s and %s (mode 0600): %s certificate %q", cert, key, usage, name)
			if len(names) > 0 {
				fmt.Fprintf(a.stdout, ", valid for %s", strings.Join(names, ", "))
			}
			if b, _ := pem.Decode(certPEM); b != nil {
				if c, err := x509.ParseCertificate(b.Bytes); err == nil {
					fmt.Fprintf(a.stdout, ", until %s", c.NotAfter.UTC().Format(time.RFC3339))
				}
			}
			fmt.Fprintln(a.stdout)
			return nil
		}),
	}
	f.add(cmd, "365d")
	if usage == creds.NodeUsage {
		cmd.Flags().StringArrayVar(&dns, "dns", nil, "another DNS name the node is reached by; repeatable")
		cmd.Flags().IPSliceVar(&ips, "ip", nil, "an IP address the node is reached at; repeatable")
	}
	return cmd
}

// parseValidity reads a duration, also in days ("365d").
func parseValidity(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err == nil && n > 0 {
			return time.Duration(n) * 24 * time.Hour, nil
		}
	} else if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return d, nil
	}
	return 0, &usageError{fmt.Errorf("--valid %q: want a positive duration, such as 8760h or 365d", s)}
}
