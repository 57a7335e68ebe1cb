package main

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nimbusha/nimbus/client"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/validate"
)

// The blobstore commands are Storm's `storm blobstore`, with its flags:
// files that topologies share (topology.blobstore.map), stored and
// replicated by the nimbuses.

func newBlobstoreCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "blobstore",
		Short: "Create, update, read and delete blobs: files that topologies share",
		Long: "blobstore manages blobs, as Storm's 'storm blobstore' does: files that\n" +
			"topologies name in topology.blobstore.map and that supervisors place in\n" +
			"their workers' directories. A blob has a key (letters, digits, '_', '.',\n" +
			"'-' and spaces), content, a version, a replication factor (how many\n" +
			"nimbuses hold it) and an ACL in Storm's syntax: u:USER:PERMS or o::PERMS,\n" +
			"PERMS from r (read), w (write: update, delete) and a (admin: set-acl,\n" +
			"replication), such as u:alice:rwa,o::r--.\n\n" +
			"create and update answer once the blob's replication factor of nimbuses\n" +
			"hold the new version, or topology.max.replication.wait.time.sec passed;\n" +
			"like submit, they and cat have no time limit unless --timeout is given.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return &usageError{errors.New("blobstore: missing command (create, update, cat, delete, list, set-acl, replication)")}
		},
	}
	cmd.AddCommand(
		newBlobCreateCommand(g), newBlobUpdateCommand(g), newBlobCatCommand(g), newBlobDeleteCommand(g),
		newBlobListCommand(g), newBlobSetACLCommand(g), newBlobReplicationCommand(g),
	)
	return cmd
}

func newBlobCreateCommand(g *globals) *cobra.Command {
	var file, acl string
	var factor int
	cmd := &cobra.Command{
		Use:   "create [-f FILE] [-a ACL[,ACL...]] [--replication-factor N] KEY",
		Short: "Store a new blob from a file or stdin",
		Long: "create stores FILE (or stdin) as a new blob under KEY; you become its owner.\n" +
			"Without -a the ACL is the nimbus's default (the creator gets rwa); without\n" +
			"--replication-factor it is storm.blobstore.replication.factor.",
		Example: "  stormctl blobstore create -f words.txt -a u:alice:rwa,o::r-- --replication-factor 3 words\n" +
			"  gzip -c model.bin | stormctl blobstore create model.gz",
		Args: blobKeyArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			key := args[0]
			opts, err := createOptions(cmd, acl, factor)
			if err != nil {
				return err
			}
			return g.upload(cmd, "create", key, file, opts, func(ctx context.Context, c *client.Client, r io.Reader, opts client.BlobOptions) (*nimbusv1.BlobInfo, bool, error) {
				resp, err := c.CreateBlob(ctx, key, r, opts)
				return resp.GetBlob(), resp.GetReplicationWaitTimedOut(), err
			})
		},
	}
	f := cmd.Flags()
	f.StringVarP(&file, "file", "f", "", "the file to store (default: stdin)")
	f.StringVarP(&acl, "acl", "a", "", "the blob's ACL, comma-separated entries such as u:alice:rwa,o::r-- (default: the nimbus's)")
	f.IntVarP(&factor, "replication-factor", "r", 0, "how many nimbuses must hold it (default: storm.blobstore.replication.factor)")
	return cmd
}

// createOptions checks create's -a and --replication-factor as the leader
// will, so a mistake is named before anything is sent.
func createOptions(cmd *cobra.Command, acl string, factor int) (client.BlobOptions, error) {
	var opts client.BlobOptions
	if cmd.Flags().Changed("acl") {
		entries, err := parseACL("acl", acl)
		if err != nil {
			return opts, err
		}
		opts.ACL = entries
	}
	n, err := optionalInt32(cmd, "replication-factor", factor, 1)
	if err != nil {
		return opts, err
	}
	if n != nil {
		if err := validate.BlobReplication("--replication-factor", *n); err != nil {
			return opts, &usageError{err}
		}
	}
	opts.ReplicationFactor = n
	return opts, nil
}

func newBlobUpdateCommand(g *globals) *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "update [-f FILE] KEY",
		Short: "Store a new version of a blob from a file or stdin",
		Long: "update stores FILE (or stdin) as the new version of the blob under KEY\n" +
			"(needs w on it). Supervisors switch running workers to it; its ACL and\n" +
			"replication factor stay (set-acl and replication --update change them).",
		Example: "  stormctl blobstore update -f words.txt words",
		Args:    blobKeyArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			key := args[0]
			return g.upload(cmd, "update", key, file, client.BlobOptions{}, func(ctx context.Context, c *client.Client, r io.Reader, opts client.BlobOptions) (*nimbusv1.BlobInfo, bool, error) {
				resp, err := c.UpdateBlob(ctx, key, r, opts)
				return resp.GetBlob(), resp.GetReplicationWaitTimedOut(), err
			})
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "the file to store (default: stdin)")
	return cmd
}

// uploadFunc is create's or update's call of the SDK: the blob as stored,
// and whether the replication wait timed out.
type uploadFunc func(ctx context.Context, c *client.Client, r io.Reader, opts client.BlobOptions) (*nimbusv1.BlobInfo, bool, error)

// upload is create and update: it opens the content (path, or stdin when
// ""), sends it with a progress bar on a terminal, and writes the blob as
// stored.
func (g *globals) upload(cmd *cobra.Command, verb, key, path string, opts client.BlobOptions, call uploadFunc) error {
	op := "blobstore " + verb + " " + key
	r, size, closeFn, err := g.openContent(path)
	if err != nil {
		return &opError{op: op, err: err}
	}
	defer closeFn()
	opts.Size = size
	return g.withClientTimeout(cmd.Context(), g.transferTimeout(), func(ctx context.Context, c *client.Client) error {
		var bar *progressBar
		if size > progressMinBytes && g.terminal(g.stderr) {
			bar = &progressBar{w: g.stderr, now: g.now}
			opts.Progress = func(sent int64) { bar.update(sent, size) }
		}
		info, timedOut, err := call(ctx, c, r, opts)
		if bar != nil {
			bar.finish()
		}
		if err != nil {
			return uploadError(op, key, err)
		}
		if g.output == "json" {
			err = writeJSON(g.stdout, info)
		} else {
			err = writeBlobInfo(g.stdout, info, timedOut)
		}
		if timedOut {
			fmt.Fprintf(g.stderr, "WARNING: the replication wait timed out: version %d of %s is on %d of %d nimbuses; "+
				"it is lost if they fail before others fetch it\n",
				info.GetVersion(), key, info.GetReplicationCount(), info.GetReplicationFactor())
		}
		return err
	})
}

// transferTimeout is the time limit of a command that moves a blob's
// content: a large blob and its replication may take minutes, so only
// --timeout bounds it (0: Ctrl-C).
func (g *globals) transferTimeout() time.Duration {
	if g.timeoutSet {
		return g.timeout
	}
	return 0
}

// openContent opens the content of an upload: the file at path, which the
// client can rewind to follow a redirect, with its size; or stdin, of a
// size unknown (-1), when path is "".
func (g *globals) openContent(path string) (io.Reader, int64, func(), error) {
	if path == "" {
		return g.input(), -1, func() {}, nil
	}
	f, size, err := openArtifact(path)
	if err != nil {
		return nil, 0, nil, errors.New(strings.Replace(err.Error(), "artifact", "file", 1))
	}
	return f, size, func() { f.Close() }, nil
}

// input is what stormctl reads as stdin.
func (g *globals) input() io.Reader {
	if g.stdin != nil {
		return g.stdin
	}
	return os.Stdin
}

// uploadError adds, to a failure that may have come after the leader
// stored the version, how to find out: an upload is never retried
// blindly.
func uploadError(op, key string, err error) error {
	e := &opError{op: op, err: err}
	if errors.Is(err, client.ErrNoLeader) || errors.Is(err, client.ErrNoSeedAnswered) {
		return e // nothing was sent
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.Internal:
		e.hint = "it may have been stored: check with 'stormctl blobstore list " + key + "' before sending it again"
	}
	return e
}

func newBlobCatCommand(g *globals) *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "cat [-f FILE] KEY",
		Short: "Write a blob's content to stdout or a file",
		Long: "cat reads the current version of the blob under KEY from the leader (needs\n" +
			"r on it) and checks it against its SHA-256. With -f it writes FILE only\n" +
			"when the whole blob arrived intact (a failure leaves FILE as it was);\n" +
			"on stdout a failure leaves what was written, which is not the blob.",
		Example: "  stormctl blobstore cat -f words.txt words\n" +
			"  stormctl blobstore cat model.gz | gunzip > model.bin",
		Args: blobKeyArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			key := args[0]
			op := "blobstore cat " + key
			return g.withClientTimeout(cmd.Context(), g.transferTimeout(), func(ctx context.Context, c *client.Client) error {
				if file == "" {
					if _, err := c.ReadBlob(ctx, key, g.stdout); err != nil {
						return &opError{op: op, err: err}
					}
					return nil
				}
				if err := readBlobToFile(ctx, c, key, file); err != nil {
					return &opError{op: op, err: err}
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "the file to write (default: stdout)")
	return cmd
}

// readBlobToFile writes the blob under key to a new file beside path and
// renames it to path once the blob arrived whole and verified, so path
// never holds part of it.
func readBlobToFile(ctx context.Context, c *client.Client, key, path string) error {
	tmp, err := os.OpenFile(path+".part-"+strconv.FormatInt(time.Now().UnixNano(), 36), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = c.ReadBlob(ctx, key, tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

func newBlobDeleteCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "delete KEY",
		Short: "Delete a blob",
		Long: "delete removes the blob under KEY (needs w on it). A blob that a live\n" +
			"topology's topology.blobstore.map names is not deleted: the error names\n" +
			"the topologies.",
		Args: blobKeyArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			key := args[0]
			return g.withClient(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				if err := c.DeleteBlob(ctx, key); err != nil {
					return &opError{op: "blobstore delete " + key, err: err}
				}
				if g.output == "json" {
					return writeJSONValue(g.stdout, object{{"deleted", key}})
				}
				_, err := fmt.Fprintf(g.stdout, "deleted %s\n", key)
				return err
			})
		},
	}
}

func newBlobListCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "list [KEY...]",
		Short: "List the blobs (all you may read, or those named) and their replication",
		Long: "list shows each blob you may read: its version, size, replication (nimbuses\n" +
			"holding its current version / its factor), state (ok, under-replicated or\n" +
			"lost), owner, ACL and the live topologies that use it. Any nimbus answers;\n" +
			"USED BY is filled when the leader does.",
		Args: func(cmd *cobra.Command, args []string) error {
			for _, k := range args {
				if err := checkBlobKey(k); err != nil {
					return err
				}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withClient(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				resp, err := c.ListBlobs(ctx, args...)
				if err != nil {
					return &opError{op: "blobstore list", err: err}
				}
				if g.output == "json" {
					return writeJSONList(g.stdout, "blobs", resp.GetBlobs())
				}
				return writeBlobList(g.stdout, resp.GetBlobs())
			})
		},
	}
}

// writeBlobList is blobstore list's table.
func writeBlobList(w io.Writer, blobs []*nimbusv1.BlobInfo) error {
	rows := make([][]string, 0, len(blobs))
	for _, b := range blobs {
		rows = append(rows, []string{
			b.GetKey(), strconv.FormatInt(b.GetVersion(), 10), strconv.FormatInt(b.GetSize(), 10),
			replication(b), blobState(b), orDash(b.GetOwner()),
			orDash(strings.Join(b.GetAcl(), ",")), orDash(strings.Join(b.GetUsedBy(), ",")),
		})
	}
	return table(w, []string{"KEY", "VERSION", "SIZE", "REPLICATION", "STATE", "OWNER", "ACL", "USED BY"}, rows)
}

// replication is "count/factor".
func replication(b *nimbusv1.BlobInfo) string {
	return fmt.Sprintf("%d/%d", b.GetReplicationCount(), b.GetReplicationFactor())
}

// blobState is the state in the tables' words: "ok", "under-replicated",
// "LOST" (shouted, as list shows a lost topology).
func blobState(b *nimbusv1.BlobInfo) string {
	switch s := b.GetState(); s {
	case "LOST", "":
		return orDash(s)
	default:
		return strings.ReplaceAll(strings.ToLower(s), "_", "-")
	}
}

// writeBlobInfo writes one blob as "key: value" lines: what create,
// update, set-acl and replication answer.
func writeBlobInfo(w io.Writer, b *nimbusv1.BlobInfo, timedOut bool) error {
	kvs := [][2]string{
		{"key", b.GetKey()},
		{"version", strconv.FormatInt(b.GetVersion(), 10)},
		{"size", strconv.FormatInt(b.GetSize(), 10)},
		{"sha256", orDash(hex.EncodeToString(b.GetContentSha256()))},
		{"replication", replication(b)},
		{"state", blobState(b)},
		{"owner", orDash(b.GetOwner())},
		{"acl", orDash(strings.Join(b.GetAcl(), ","))},
	}
	if timedOut {
		kvs = append(kvs, [2]string{"replication wait timed out", yesNo(timedOut)})
	}
	return fields(w, kvs)
}

func newBlobSetACLCommand(g *globals) *cobra.Command {
	var set string
	cmd := &cobra.Command{
		Use:   "set-acl [-s ACL,...] KEY",
		Short: "Replace a blob's ACL, or show it",
		Long: "set-acl -s replaces the ACL of the blob under KEY with the comma-separated\n" +
			"entries given (needs a on it; its owner keeps a whatever the ACL says).\n" +
			"Without -s it shows the blob and changes nothing, as Storm's does.",
		Example: "  stormctl blobstore set-acl -s u:alice:rwa,u:bob:r--,o::--- words",
		Args:    blobKeyArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			key := args[0]
			op := "blobstore set-acl " + key
			var acl []string
			if cmd.Flags().Changed("set") {
				var err error
				if acl, err = parseACL("set", set); err != nil {
					return err
				}
			}
			return g.withClient(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				var info *nimbusv1.BlobInfo
				var err error
				if acl == nil {
					info, err = listOne(ctx, c, key)
				} else {
					info, err = c.SetBlobACL(ctx, key, acl)
				}
				if err != nil {
					return &opError{op: op, err: err}
				}
				return g.writeBlob(info)
			})
		},
	}
	cmd.Flags().StringVarP(&set, "set", "s", "", "the new ACL, comma-separated entries such as u:alice:rwa,o::r--")
	return cmd
}

func newBlobReplicationCommand(g *globals) *cobra.Command {
	var read, update bool
	var factor int
	cmd := &cobra.Command{
		Use:   "replication --read KEY | --update --replication-factor N KEY",
		Short: "Show or set how many nimbuses hold a blob",
		Long: "replication --read shows how many nimbuses hold the current version of the\n" +
			"blob under KEY, and its replication factor. --update --replication-factor N\n" +
			"sets the factor (needs a on the blob); the nimbuses then fetch copies.",
		Example: "  stormctl blobstore replication --read words\n" +
			"  stormctl blobstore replication --update --replication-factor 5 words",
		Args: blobKeyArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			key := args[0]
			op := "blobstore replication " + key
			if read == update {
				return &usageError{errors.New("replication: give one of --read and --update")}
			}
			if read && cmd.Flags().Changed("replication-factor") {
				return &usageError{errors.New("replication --read: --replication-factor is for --update")}
			}
			var n int32
			if update {
				if !cmd.Flags().Changed("replication-factor") {
					return &usageError{errors.New("replication --update: missing --replication-factor N")}
				}
				var err error
				if n, err = int32Flag("replication-factor", factor, 1); err != nil {
					return err
				}
				if err := validate.BlobReplication("--replication-factor", n); err != nil {
					return &usageError{err}
				}
			}
			return g.withClient(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				var info *nimbusv1.BlobInfo
				var err error
				if read {
					info, err = listOne(ctx, c, key)
				} else {
					info, err = c.SetBlobReplication(ctx, key, n)
				}
				if err != nil {
					return &opError{op: op, err: err}
				}
				return g.writeBlob(info)
			})
		},
	}
	f := cmd.Flags()
	f.BoolVar(&read, "read", false, "show the blob's replication")
	f.BoolVar(&update, "update", false, "set the blob's replication factor (with --replication-factor)")
	f.IntVarP(&factor, "replication-factor", "r", 0, "with --update: how many nimbuses must hold the blob")
	return cmd
}

// listOne reads the blob under key from any nimbus: NotFound when there
// is none the caller may read.
func listOne(ctx context.Context, c *client.Client, key string) (*nimbusv1.BlobInfo, error) {
	resp, err := c.ListBlobs(ctx, key)
	if err != nil {
		return nil, err
	}
	for _, b := range resp.GetBlobs() {
		if b.GetKey() == key {
			return b, nil
		}
	}
	return nil, status.Errorf(codes.NotFound, "no blob %q (or you may not read it)", key)
}

// writeBlob writes one blob: its fields, or with -o json its BlobInfo.
func (g *globals) writeBlob(info *nimbusv1.BlobInfo) error {
	if g.output == "json" {
		return writeJSON(g.stdout, info)
	}
	return writeBlobInfo(g.stdout, info, false)
}

// blobKeyArg accepts exactly one KEY, checked by Storm's key rules.
func blobKeyArg(cmd *cobra.Command, args []string) error {
	if err := exactArgs("KEY")(cmd, args); err != nil {
		return err
	}
	return checkBlobKey(args[0])
}

func checkBlobKey(key string) error {
	if err := validate.BlobKey("KEY", key); err != nil {
		return &usageError{err}
	}
	return nil
}

// parseACL splits --flag's comma-separated ACL entries and checks them by
// Storm's syntax, naming the entry that does not parse.
func parseACL(flag, value string) ([]string, error) {
	var entries []string
	for e := range strings.SplitSeq(value, ",") {
		if e = strings.TrimSpace(e); e != "" {
			entries = append(entries, e)
		}
	}
	if len(entries) == 0 {
		return nil, &usageError{fmt.Errorf("--%s %q: want at least one entry such as u:alice:rwa or o::r--", flag, value)}
	}
	if _, err := validate.BlobACL("--"+flag, entries); err != nil {
		var ve *validate.Error
		if errors.As(err, &ve) {
			return nil, &usageError{fmt.Errorf("--%s %q: %s", flag, value, ve.Reason)}
		}
		return nil, &usageError{err}
	}
	return entries, nil
}
