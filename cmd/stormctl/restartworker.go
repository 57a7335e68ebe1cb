package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/nimbusha/nimbus/client"
	"github.com/nimbusha/nimbus/validate"
)

// newRestartWorkerCommand is restart-worker: one worker of a topology
// stopped and started again on its slot (Storm UI's restartworker).
func newRestartWorkerCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "restart-worker TOPOLOGY HOST:PORT",
		Short: "Restart one worker of a topology on its slot (its owner and admins)",
		Long: `Restart one worker of a topology on its slot: its supervisor stops it and starts it
again at once. The worker's restart count goes up and its last error says who asked.
HOST:PORT is the worker as 'stormctl topology TOPOLOGY' lists it.`,
		Example: "  stormctl restart-worker wordcount host-1.example.com:6700",
		Args:    exactArgs("TOPOLOGY", "HOST:PORT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, worker := args[0], args[1]
			if _, _, err := validate.HostPort("HOST:PORT", worker); err != nil {
				return &usageError{err}
			}
			return g.withClient(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				resp, err := c.RestartWorker(ctx, name, worker)
				if err != nil {
					return &opError{op: "restart-worker " + name + " " + worker, err: err}
				}
				if g.output == "json" {
					return writeJSON(g.stdout, resp)
				}
				_, err = fmt.Fprintf(g.stdout, "asked supervisor %s to restart the worker of %s on port %d (restart request %d)\n",
					resp.GetSupervisorId(), name, resp.GetPort(), resp.GetGeneration())
				return err
			})
		},
	}
}
