package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// snapshotPiece is the most of a file one RestoreSnapshot message carries.
const snapshotPiece = 1 << 20

// SaveSnapshot writes a snapshot of the cluster, taken by the leader, to
// w: every persistent node under the root at one point in time and each
// topology's spec, with the code when withCode. NOT_LEADER is followed
// while nothing was written to w; any failure after that is returned. The
// bytes are a whole snapshot only if it returns nil; even then, check the
// file (the snapshot package's Verify) before trusting it. Needs
// nimbus.admins. WithCallTimeout does not apply: ctx bounds it.
func (c *Client) SaveSnapshot(ctx context.Context, withCode bool, w io.Writer) error {
	for redirects := 0; ; redirects++ {
		addr, err := c.leaderAddr(ctx)
		if err != nil {
			return err
		}
		cn, err := c.conn(addr)
		if err != nil {
			return err
		}
		sctx, cancel := context.WithCancel(ctx)
		written, err := receiveSnapshot(sctx, cn.api, withCode, w)
		cancel()
		to, ok := notLeader(err)
		if written > 0 || !ok || to == "" || redirects >= c.opts.maxRedirects {
			return err
		}
		if verr := validateAddr(to); verr != nil {
			return fmt.Errorf("client: SaveSnapshot: redirect to bad leader address %q: %w", to, err)
		}
		c.learn(to)
		c.setLeader(to)
	}
}

// receiveSnapshot copies one SaveSnapshot stream into w, and says how
// many bytes it wrote.
func receiveSnapshot(ctx context.Context, api nimbusv1.NimbusServiceClient, withCode bool, w io.Writer) (int64, error) {
	stream, err := api.SaveSnapshot(ctx, &nimbusv1.SaveSnapshotRequest{WithCode: withCode})
	if err != nil {
		return 0, err
	}
	var written int64
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return written, nil
		}
		if err != nil {
			return written, err
		}
		n, err := w.Write(chunk.GetData())
		written += int64(n)
		if err != nil {
			return written, err
		}
	}
}

// RestoreSnapshot sends the snapshot in r to a nimbus, which puts it back
// under the root: any nimbus, leader or not (after a wiped root there is
// none); the first that accepts the stream. force overwrites what the root
// holds otherwise. It is not retried once sent. Needs nimbus.admins.
func (c *Client) RestoreSnapshot(ctx context.Context, r io.Reader, force bool) (*nimbusv1.RestoreSnapshotResponse, error) {
	var failures []SeedFailure
	for _, addr := range c.readOrder() {
		cn, err := c.conn(addr)
		if err != nil {
			return nil, err
		}
		stream, err := cn.api.RestoreSnapshot(ctx)
		if err == nil {
			err = stream.Send(&nimbusv1.RestoreSnapshotRequest{Force: force})
		}
		if err != nil {
			failures = append(failures, SeedFailure{Addr: addr, Err: err, Dial: cn.dialErr()})
			continue
		}
		return sendSnapshot(stream, r)
	}
	return nil, &NoSeedAnsweredError{Failures: failures}
}

func sendSnapshot(stream nimbusv1.NimbusService_RestoreSnapshotClient, r io.Reader) (*nimbusv1.RestoreSnapshotResponse, error) {
	buf := make([]byte, snapshotPiece)
	for {
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			// A message must not change once sent: a piece of its own.
			if serr := stream.Send(&nimbusv1.RestoreSnapshotRequest{Data: bytes.Clone(buf[:n])}); serr != nil {
				if _, rerr := stream.CloseAndRecv(); rerr != nil {
					return nil, rerr // the server's reason for stopping
				}
				return nil, serr
			}
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return stream.CloseAndRecv()
		}
		if err != nil {
			_ = stream.CloseSend()
			return nil, fmt.Errorf("client: RestoreSnapshot: read the snapshot: %w", err)
		}
	}
}
