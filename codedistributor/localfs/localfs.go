// Package localfs is the default code distributor: code lives only in the
// nimbuses' local stores, and a node downloads each file from any replica
// (a nimbus registered under /code-distributor/<topology-id>) through its
// CodeService, moving on to the next replica when one fails or sends bytes
// that do not match the meta.
package localfs

import (
	"context"
	"errors"
	"fmt"
	"io"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nimbusha/nimbus/codedistributor"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// Name is the value of storm.codedistributor.class that selects it.
const Name = "localfs"

func init() { codedistributor.Register(Name, New) }

type distributor struct{ p codedistributor.Params }

// New builds the backend.
func New(p codedistributor.Params) (codedistributor.Distributor, error) {
	return &distributor{p: p}, nil
}

// Upload has nothing to store elsewhere: the uploader's own store, served
// by its CodeService, is the first replica.
func (d *distributor) Upload(_ context.Context, _ string, code codedistributor.Code) (*clusterv1.CodeMeta, error) {
	meta := &clusterv1.CodeMeta{TopologyId: code.TopologyID, Distributor: Name, Files: code.Meta.GetFiles()}
	return meta, nil
}

func (d *distributor) Download(ctx context.Context, dir string, code codedistributor.Code) error {
	for _, f := range code.Meta.GetFiles() {
		if err := d.downloadFile(ctx, dir, code, f); err != nil {
			return err
		}
	}
	return nil
}

// downloadFile tries every replica in turn until one sends f intact. The
// replicas are read afresh for each file, so one that joined meanwhile is
// used; a recovery's sources (code.Sources) are not replicas.
func (d *distributor) downloadFile(ctx context.Context, dir string, code codedistributor.Code, f *clusterv1.CodeFile) error {
	sources := code.Sources
	if sources == nil {
		var err error
		if sources, err = codedistributor.Sources(d.p.Session, code.Kind, code.TopologyID, code.Digest, d.p.Self); err != nil {
			return err
		}
	}
	lastErr := fmt.Errorf("%w: no replica of %s to download %s from", codedistributor.ErrNotHeld, code.TopologyID, f.GetName())
	for _, addr := range sources {
		err := d.downloadFrom(ctx, addr, dir, code, f)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		lastErr = err
		if errors.Is(err, codedistributor.ErrCorrupt) {
			d.p.Logger.Error("discarding corrupt download; trying the next replica",
				"topology", code.TopologyID, "file", f.GetName(), "replica", addr, "err", err)
		} else {
			d.p.Logger.Warn("download failed; trying the next replica",
				"topology", code.TopologyID, "file", f.GetName(), "replica", addr, "err", err)
		}
	}
	return lastErr
}

// downloadFrom streams one file from one replica, hashing as it writes.
func (d *distributor) downloadFrom(ctx context.Context, addr, dir string, code codedistributor.Code, f *clusterv1.CodeFile) error {
	client, err := d.p.Peers.Code(addr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := client.DownloadCode(ctx, &nimbusv1.DownloadCodeRequest{TopologyId: code.TopologyID, File: f.GetName(), Blob: code.Kind == codedistributor.KindBlob})
	if err != nil {
		return err
	}
	out, err := codedistributor.CreateVerified(dir, f, addr)
	if err != nil {
		return err
	}
	defer out.Abort()
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if status.Code(err) == codes.DataLoss {
			// The replica found its own copy corrupt while sending it.
			return fmt.Errorf("%w: %s from %s: %v", codedistributor.ErrCorrupt, f.GetName(), addr, err)
		}
		if err != nil {
			return err
		}
		if _, err := out.Write(msg.GetChunk()); err != nil {
			return err
		}
	}
	return out.Finish()
}

func (d *distributor) Cleanup(context.Context, string) error { return nil }

// CleanupBlob has nothing to remove: blobs live only in the nodes' stores.
func (d *distributor) CleanupBlob(context.Context, string, *clusterv1.CodeMeta) error { return nil }

func (d *distributor) Close() error { return nil }
