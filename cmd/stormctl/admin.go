package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nimbusha/nimbus/client"
	"github.com/nimbusha/nimbus/snapshot"
)

func newAdminCommand(g *globals) *cobra.Command {
	return commandGroup("admin", "Operations for nimbus.admins: repairs, leadership, snapshots", newForgetCommand(g), newHandOverCommand(g), newSnapshotCommand(g))
}

// newForgetCommand is admin forget: remove a topology marked LOST, through
// any nimbus, leader or not.
func newForgetCommand(g *globals) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "forget TOPOLOGY",
		Short: "Remove a topology marked LOST (no nimbus and no supervisor holds its code); works with no leader",
		Long: "Remove a topology marked LOST: its code is held by no nimbus and no supervisor, so it can never run again. " +
			"Any nimbus does it, with or without a leader; it is refused for a topology that is not LOST (kill that instead). " +
			"Audited on the nimbus that answers.",
		Args: exactArgs("TOPOLOGY"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			return g.withClient(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				resp, err := c.ForgetTopology(ctx, name, reason)
				if err != nil {
					return &opError{op: "admin forget " + name, err: err}
				}
				if g.output == "json" {
					return writeJSON(g.stdout, resp)
				}
				how := "without a leader's fence (no nimbus led)"
				if resp.GetFenced() {
					how = "fenced by the leader's term"
				}
				_, err = fmt.Fprintf(g.stdout, "forgot %s (%s), %s\n", name, resp.GetTopologyId(), how)
				return err
			})
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the audit log")
	return cmd
}

// newHandOverCommand is admin handover: move leadership on purpose, say to
// the first nimbus upgraded before the others restart.
func newHandOverCommand(g *globals) *cobra.Command {
	var to string
	cmd := &cobra.Command{
		Use:   "handover [--to HOST:PORT]",
		Short: "Hand leadership to the named nimbus, or to the next one that holds every live topology's code",
		Long: "Hand leadership over on purpose: to the nimbus at --to, or to the next one queued that holds the code of every live topology. " +
			"It is refused, saying why, for a nimbus that is unknown, not registered, not queued or missing code. " +
			"It returns once the new leader acts, and says how long the cluster had no leader. Audited on the leader.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.withClient(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				resp, err := c.HandOver(ctx, to)
				if err != nil {
					return &opError{op: "admin handover", err: err}
				}
				if g.output == "json" {
					return writeJSON(g.stdout, resp)
				}
				if resp.GetFrom() == resp.GetTo() {
					_, err = fmt.Fprintf(g.stdout, "%s leads already (epoch %d); nothing to do\n", resp.GetTo(), resp.GetToEpoch())
					return err
				}
				_, err = fmt.Fprintf(g.stdout, "handed leadership from %s (epoch %d) to %s (epoch %d); %d ms without a leader\n",
					resp.GetFrom(), resp.GetFromEpoch(), resp.GetTo(), resp.GetToEpoch(), resp.GetLeaderlessMs())
				return err
			})
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "HOST:PORT of the nimbus to lead (default: the next one that holds all code)")
	return cmd
}

// newSnapshotCommand is admin snapshot: save, restore and inspect cluster
// snapshots.
func newSnapshotCommand(g *globals) *cobra.Command {
	return commandGroup("snapshot", "Save a snapshot of the cluster's state, or put one back",
		newSnapshotSaveCommand(g), newSnapshotRestoreCommand(g), newSnapshotInspectCommand(g))
}

func newSnapshotSaveCommand(g *globals) *cobra.Command {
	var withCode bool
	cmd := &cobra.Command{
		Use:   "save FILE",
		Short: "Save a snapshot of the cluster (every persistent node at one point in time, each topology's spec) to FILE",
		Long: "Save a snapshot of the cluster, taken by the leader: every persistent node under the ZooKeeper root at one point in time " +
			"and each topology's spec, with --with-code every topology's code too. FILE is written only once the whole snapshot " +
			"arrived and checked (mode 0600: topologies' confs may hold secrets).",
		Args: exactArgs("FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withClient(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				contents, err := saveSnapshot(ctx, c, args[0], withCode)
				if err != nil {
					return &opError{op: "admin snapshot save", err: err}
				}
				return writeSnapshotContents(g, "saved", args[0], contents)
			})
		},
	}
	cmd.Flags().BoolVar(&withCode, "with-code", false, "every topology's code too (as large as the cluster's code)")
	return cmd
}

// saveSnapshot writes the leader's snapshot into a temporary file beside
// path, checks it whole, and renames it to path.
func saveSnapshot(ctx context.Context, c *client.Client, path string, withCode bool) (*snapshot.Contents, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name()) // after the rename, there is none
	defer tmp.Close()
	if err := c.SaveSnapshot(ctx, withCode, tmp); err != nil {
		return nil, err
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	contents, err := snapshot.Verify(tmp)
	if err != nil {
		return nil, fmt.Errorf("the snapshot received does not check: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return nil, err
	}
	return contents, os.Rename(tmp.Name(), path)
}

func newSnapshotRestoreCommand(g *globals) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "restore FILE",
		Short: "Put the snapshot in FILE back under the cluster's root (refused onto a root that is not empty, unless --force)",
		Long: "Put a snapshot back under the cluster's ZooKeeper root, through any nimbus, with or without a leader: after a wiped root " +
			"the daemons keep everything running and wait for it. Refused, nothing written, for a file that is truncated or altered " +
			"(checked here first), from a newer release or from another cluster, and, unless --force, onto a root that holds " +
			"a cluster (a topology, or the node that names a cluster): the refusal says what would be overwritten.",
		Args: exactArgs("FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := os.Open(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			if _, err := snapshot.Verify(f); err != nil {
				return &opError{op: "admin snapshot restore", err: err}
			}
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				return err
			}
			return g.withClient(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				resp, err := c.RestoreSnapshot(ctx, f, force)
				if err != nil {
					return &opError{op: "admin snapshot restore", err: err}
				}
				if g.output == "json" {
					return writeJSON(g.stdout, resp)
				}
				_, err = fmt.Fprintf(g.stdout, "restored %d topologies (%d nodes) of cluster %s, taken %s; overwrote %d nodes\n",
					resp.GetTopologies(), resp.GetNodes(), resp.GetClusterId(), time.UnixMilli(resp.GetTakenUnixMs()).Format(time.RFC3339), resp.GetNumOverwritten())
				if err == nil && len(resp.GetRemaining()) > 0 {
					_, err = fmt.Fprintf(g.stdout, "kept topologies the snapshot does not hold: %s\n", strings.Join(resp.GetRemaining(), ", "))
				}
				return err
			})
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "overwrite what the root holds otherwise")
	return cmd
}

func newSnapshotInspectCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "inspect FILE",
		Short: "Check the snapshot in FILE and say what it holds; needs no nimbus",
		Args:  exactArgs("FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := os.Open(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			contents, err := snapshot.Verify(f)
			if err != nil {
				return &opError{op: "admin snapshot inspect", err: err}
			}
			return writeSnapshotContents(g, "checked", args[0], contents)
		},
	}
}

func writeSnapshotContents(g *globals, did, path string, c *snapshot.Contents) error {
	h := c.Header
	if g.output == "json" {
		return writeJSON(g.stdout, h)
	}
	_, err := fmt.Fprintf(g.stdout, "%s %s: cluster %s (root %s), taken %s by %s (release %s) at zxid 0x%x; %d nodes, %d pieces of code, %d bytes%s\n",
		did, path, h.GetClusterId(), h.GetRoot(), time.UnixMilli(h.GetTakenUnixMs()).Format(time.RFC3339), h.GetTakenBy(), h.GetRelease(),
		h.GetZxid(), c.Nodes, c.Files, c.Bytes, map[bool]string{true: ", with the code", false: ""}[h.GetWithCode()])
	return err
}
