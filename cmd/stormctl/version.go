package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/nimbusha/nimbus/client"
	"github.com/nimbusha/nimbus/internal/version"
)

// versionInfo is what stormctl version shows: this client's version and
// the leader nimbus's, as the leader reports it in GetLeader (the API has
// no version RPC, and needs none).
type versionInfo struct {
	Client        string `json:"clientVersion"`
	Server        string `json:"serverVersion,omitempty"`
	ServerAddress string `json:"serverAddress,omitempty"` // the leader's host:port
}

// unknownVersion is the server's version when the leader names none.
const unknownVersion = "unknown"

func newVersionCommand(g *globals) *cobra.Command {
	var clientOnly bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Show stormctl's version and the leader nimbus's",
		Long: "version shows stormctl's version, then asks the cluster for its leader and\n" +
			"shows the leader's version. With --client it asks nobody. When no nimbus\n" +
			"answers, it shows the client's version and fails, saying why.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info := versionInfo{Client: version.Version}
			if clientOnly {
				return writeVersion(g, info)
			}
			err := g.withClient(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				resp, err := c.GetLeader(ctx)
				if err != nil {
					return err
				}
				l := resp.GetLeader()
				info.Server = l.GetVersion()
				if info.Server == "" {
					info.Server = unknownVersion // a nimbus that does not say: never guess
				}
				info.ServerAddress = net.JoinHostPort(l.GetHost(), strconv.Itoa(int(l.GetPort())))
				return nil
			})
			if err != nil {
				// What is known first, then why the rest is not.
				if werr := writeVersion(g, info); werr != nil {
					return werr
				}
				return &opError{op: "version", err: err}
			}
			return writeVersion(g, info)
		},
	}
	cmd.Flags().BoolVar(&clientOnly, "client", false, "show only stormctl's version; ask no nimbus")
	return cmd
}

func writeVersion(g *globals, info versionInfo) error {
	if g.output == "json" {
		b, err := json.Marshal(info)
		if err != nil {
			return err
		}
		return writeIndented(g.stdout, b)
	}
	if _, err := fmt.Fprintf(g.stdout, "client: %s\n", version.String("stormctl")); err != nil {
		return err
	}
	if info.Server == "" {
		return nil
	}
	_, err := fmt.Fprintf(g.stdout, "server: %s (leader %s)\n", info.Server, info.ServerAddress)
	return err
}
