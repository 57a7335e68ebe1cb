package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nimbusha/nimbus/certs"
)

// stormctl tls: a throwaway CA and certificates, for the quickstart and
// tests, as `nomad tls ca create` and `nomad tls cert create` make them.
// They need no nimbus, and write files only where told.

const day = 24 * time.Hour

// serverHosts are in every server certificate: daemons on one machine, and
// clients on it, dial each other by these.
var serverHosts = []string{"localhost", "127.0.0.1"}

func newTLSCommand(g *globals) *cobra.Command {
	return commandGroup("tls", "Make a throwaway CA and certificates (quickstart, tests)",
		commandGroup("ca", "The certificate authority", newTLSCACreateCommand(g)),
		commandGroup("cert", "Certificates the CA signs", newTLSCertCreateCommand(g)),
	)
}

// commandGroup is a command that only holds subcommands; run alone, or with
// an unknown one, it is a usage error, as the root is.
func commandGroup(name, short string, subs ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{
		Use:   name + " COMMAND",
		Short: short,
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				var names []string
				for _, c := range cmd.Commands() {
					names = append(names, c.Name())
				}
				return &usageError{fmt.Errorf("%s: missing command (%s)", cmd.Name(), strings.Join(names, ", "))}
			}
			return &usageError{fmt.Errorf("%s: unknown command %q", cmd.Name(), args[0])}
		},
	}
	cmd.AddCommand(subs...)
	return cmd
}

func newTLSCACreateCommand(g *globals) *cobra.Command {
	var dir, name string
	var days int
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Make a CA: DIR/ca.pem, every process's truststore, and DIR/ca-key.pem, which signs certificates",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return &usageError{fmt.Errorf("%s: --dir is required", cmd.CommandPath())}
			}
			lifetime, err := daysFlag(days)
			if err != nil {
				return err
			}
			ca, err := certs.NewCA(dir, name, lifetime)
			if err != nil {
				return &opError{op: "tls ca create", err: err}
			}
			return g.wrote(written{
				Certificate: ca.CertFile, Key: ca.KeyFile, Subject: ca.Cert.Subject.String(),
				Usage: []string{"CA"}, Expires: ca.Cert.NotAfter,
				Hint: "give ca.pem to every process as nimbus.grpc.tls.truststore.path; keep ca-key.pem secret",
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "dir", "", "directory to write ca.pem and ca-key.pem in (created if need be)")
	f.StringVar(&name, "name", "", "the CA's common name (default \"Nimbus-HA CA\" and a random suffix)")
	f.IntVar(&days, "days", int(certs.DefaultCALifetime/day), "days the CA is valid")
	return cmd
}

// certFlags are the flags of tls cert create.
type certFlags struct {
	dir, ca, caKey, name string
	hosts                []string
	server, client       bool
	days                 int
}

func newTLSCertCreateCommand(g *globals) *cobra.Command {
	var cf certFlags
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Make a key and a certificate signed by the CA: DIR/NAME.pem and DIR/NAME-key.pem",
		Long: "Make a key and a certificate signed by the CA: DIR/NAME.pem and DIR/NAME-key.pem.\n" +
			"NAME is the certificate's common name: a client's principal. A server certificate\n" +
			"is for the --host names and addresses, and always for localhost and 127.0.0.1.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts, err := cf.options(cmd)
			if err != nil {
				return err
			}
			ca, err := certs.LoadCA(cf.ca, cf.caKey)
			if err != nil {
				return &opError{op: "tls cert create", err: err}
			}
			c, err := ca.Issue(cf.dir, cf.name, opts)
			if err != nil {
				return &opError{op: "tls cert create", err: err}
			}
			return g.wrote(written{
				Certificate: c.Cert, Key: c.Key, Subject: c.Leaf.Subject.String(),
				Usage: roles(opts), Hosts: opts.Hosts, Expires: c.Leaf.NotAfter,
				Hint: "give them to the process as nimbus.grpc.tls.cert.path and nimbus.grpc.tls.key.path",
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&cf.dir, "dir", "", "directory to write the certificate and key in (created if need be)")
	f.StringVar(&cf.ca, "ca", "", "the CA's certificate (default DIR/ca.pem)")
	f.StringVar(&cf.caKey, "ca-key", "", "the CA's key (default DIR/ca-key.pem)")
	f.StringVar(&cf.name, "name", "", "the certificate's common name, a client's principal, and its file name")
	f.StringArrayVar(&cf.hosts, "host", nil, "a DNS name or IP address a server certificate is for (repeatable)")
	f.BoolVar(&cf.server, "server", false, "for TLS servers (a nimbus; a daemon, which also dials, takes --client too)")
	f.BoolVar(&cf.client, "client", false, "for TLS clients (stormctl, the SDK, daemons fetching code)")
	f.IntVar(&cf.days, "days", int(certs.DefaultCertLifetime/day), "days the certificate is valid")
	return cmd
}

// options checks the flags and says what to issue; the CA files default to
// those tls ca create wrote in --dir.
func (cf *certFlags) options(cmd *cobra.Command) (certs.CertOptions, error) {
	var opts certs.CertOptions
	switch {
	case cf.dir == "":
		return opts, &usageError{fmt.Errorf("%s: --dir is required", cmd.CommandPath())}
	case cf.name == "":
		return opts, &usageError{fmt.Errorf("%s: --name is required", cmd.CommandPath())}
	case !cf.server && !cf.client:
		return opts, &usageError{fmt.Errorf("%s: give --server, --client or both", cmd.CommandPath())}
	case len(cf.hosts) > 0 && !cf.server:
		return opts, &usageError{fmt.Errorf("%s: --host is for a --server certificate", cmd.CommandPath())}
	}
	if cf.ca == "" {
		cf.ca = filepath.Join(cf.dir, certs.CACertFile)
	}
	if cf.caKey == "" {
		cf.caKey = filepath.Join(cf.dir, certs.CAKeyFile)
	}
	lifetime, err := daysFlag(cf.days)
	if err != nil {
		return opts, err
	}
	opts = certs.CertOptions{Server: cf.server, Client: cf.client, Lifetime: lifetime}
	if cf.server {
		for _, h := range append(cf.hosts, serverHosts...) {
			if h = strings.TrimSpace(h); h != "" && !slices.Contains(opts.Hosts, h) {
				opts.Hosts = append(opts.Hosts, h)
			}
		}
	}
	return opts, nil
}

// daysFlag is --days as a lifetime.
func daysFlag(days int) (time.Duration, error) {
	const most = 100 * 365
	if days < 1 || days > most {
		return 0, &usageError{fmt.Errorf("--days %d: want a whole number from 1 to %d", days, most)}
	}
	return time.Duration(days) * day, nil
}

// roles names what a certificate is for.
func roles(opts certs.CertOptions) []string {
	var out []string
	if opts.Server {
		out = append(out, "server")
	}
	if opts.Client {
		out = append(out, "client")
	}
	return out
}

// written is what a tls command wrote, as it prints it.
type written struct {
	Certificate string    `json:"certificate"`
	Key         string    `json:"key"`
	Subject     string    `json:"subject"`
	Usage       []string  `json:"usage"`
	Hosts       []string  `json:"hosts,omitempty"`
	Expires     time.Time `json:"expires"`
	Hint        string    `json:"-"`
}

// wrote prints w as JSON, or as fields and the hint.
func (g *globals) wrote(w written) error {
	if g.output == "json" {
		b, err := json.Marshal(w)
		if err != nil {
			return err
		}
		return writeIndented(g.stdout, b)
	}
	kvs := [][2]string{
		{"certificate", w.Certificate},
		{"key", w.Key + " (mode 0600)"},
		{"subject", w.Subject},
		{"for", strings.Join(w.Usage, ", ")},
	}
	if len(w.Hosts) > 0 {
		kvs = append(kvs, [2]string{"hosts", strings.Join(w.Hosts, ", ")})
	}
	kvs = append(kvs, [2]string{"expires", w.Expires.UTC().Format("2006-01-02 15:04:05 MST")})
	var b bytes.Buffer
	if err := fields(&b, kvs); err != nil {
		return err
	}
	b.WriteString(w.Hint + "\n")
	_, err := g.stdout.Write(b.Bytes())
	return err
}
