package nimbus

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nimbusha/nimbus/apierr"
	"github.com/nimbusha/nimbus/apistatus"
	"github.com/nimbusha/nimbus/auth"
	"github.com/nimbusha/nimbus/internal/version"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/snapshot"
	"github.com/nimbusha/nimbus/validate"
)

// snapshotChunk is the most of a snapshot one message carries.
const snapshotChunk = 1 << 20

// SaveSnapshot streams a snapshot of the cluster, taken by the leader
// (package snapshot): every persistent node at one point in time and each
// topology's spec from the leader's store, which holds them all, with the
// code on request.
func (s *service) SaveSnapshot(req *nimbusv1.SaveSnapshotRequest, stream nimbusv1.NimbusService_SaveSnapshotServer) error {
	ctx := stream.Context()
	if _, err := s.leaderTerm(ctx); err != nil {
		return apistatus.ToStatus(err)
	}
	pr, pw := io.Pipe()
	var taken *snapshot.Taken
	var wg sync.WaitGroup
	wg.Go(func() {
		var err error
		taken, err = snapshot.Take(ctx, s.snapshotSource(), pw, s.snapshotHeader(), req.GetWithCode())
		pw.CloseWithError(err)
	})
	defer wg.Wait()
	defer pr.Close() // a client gone ends the taking too
	buf := make([]byte, snapshotChunk)
	for {
		n, err := io.ReadFull(pr, buf)
		if n > 0 {
			// A message must not change once sent: a piece of its own.
			if serr := stream.Send(&nimbusv1.SaveSnapshotResponse{Data: bytes.Clone(buf[:n])}); serr != nil {
				return serr
			}
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			return apistatus.ToStatus(err)
		}
	}
	wg.Wait()
	s.log.Info("snapshot saved", "principal", auth.Who(ctx), "topologies", taken.Topologies, "nodes", taken.Nodes,
		"with_code", req.GetWithCode(), "zxid", taken.Header.GetZxid(), "not_held", taken.NotHeld)
	return nil
}

// takeSnapshot is the leader's own snapshot, without the code (every
// nimbus holds that): leading's snapshots duty saves it.
func (s *service) takeSnapshot(ctx context.Context, w io.Writer) (int64, error) {
	taken, err := snapshot.Take(ctx, s.snapshotSource(), w, s.snapshotHeader(), false)
	if err != nil {
		return 0, err
	}
	return taken.Header.GetZxid(), nil
}

func (s *service) snapshotSource() snapshot.Source {
	return snapshot.Source{Session: s.sess, Store: s.store}
}

func (s *service) snapshotHeader() *clusterv1.SnapshotHeader {
	return &clusterv1.SnapshotHeader{Release: version.Release, Version: version.Version, TakenBy: s.self}
}

// maxRestoreBytes bounds a snapshot a nimbus takes in: its code included,
// far more than any cluster's state.
const maxRestoreBytes = 64 << 30

// RestoreSnapshot puts a snapshot back under the root: it takes the file
// into a temporary file in storm.local.dir, then snapshot.Restore checks
// it whole and writes it (nothing written if any check fails). Any nimbus
// answers, leader or not: after a wiped root nobody leads. One at a time.
func (s *service) RestoreSnapshot(stream nimbusv1.NimbusService_RestoreSnapshotServer) error {
	ctx := stream.Context()
	if !s.restoring.TryLock() {
		return apistatus.ToStatus(fmt.Errorf("%w: a snapshot is being restored through this nimbus already", apierr.ErrWrongStatus))
	}
	defer s.restoring.Unlock()
	file, force, err := s.receiveSnapshot(stream)
	if file != nil {
		defer os.Remove(file.Name())
		defer file.Close()
	}
	if err != nil {
		return apistatus.ToStatus(err)
	}
	started := time.Now()
	r, err := snapshot.Restore(ctx, snapshot.Target{Session: s.sess, Store: s.store, ClusterID: s.memory.ID()}, file, force)
	if errors.Is(err, snapshot.ErrInvalid) {
		err = validate.Invalid("snapshot", "%v", err)
	}
	if err != nil {
		return apistatus.ToStatus(err)
	}
	h := r.Header
	s.log.Warn("snapshot restored", "principal", auth.Who(ctx), "cluster_id", h.GetClusterId(), "taken", time.UnixMilli(h.GetTakenUnixMs()),
		"topologies", r.Topologies, "nodes", r.Nodes, "overwritten", r.Overwritten, "code_restored", len(r.CodeRestored), "took", time.Since(started))
	return stream.SendAndClose(&nimbusv1.RestoreSnapshotResponse{
		ClusterId: h.GetClusterId(), Release: h.GetRelease(), TakenUnixMs: h.GetTakenUnixMs(),
		Nodes: int32(r.Nodes), Topologies: int32(r.Topologies), Overwritten: r.Overwrite, NumOverwritten: int32(r.Overwritten),
		Remaining: r.Remaining, CodeRestored: r.CodeRestored,
	})
}

// receiveSnapshot writes the stream's pieces into a temporary file in the
// nimbus's local directory, at most maxRestoreBytes, and returns it with
// the force option of the first message.
func (s *service) receiveSnapshot(stream nimbusv1.NimbusService_RestoreSnapshotServer) (*os.File, bool, error) {
	file, err := os.CreateTemp(filepath.Join(s.cfg.LocalDir, "nimbus"), "restore-*.snapshot")
	if err != nil {
		return nil, false, err
	}
	var force bool
	var size int64
	for first := true; ; first = false {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return file, force, file.Sync()
		}
		if err != nil {
			return file, false, err
		}
		if first {
			force = msg.GetForce()
		}
		if size += int64(len(msg.GetData())); size > maxRestoreBytes {
			return file, false, fmt.Errorf("%w: the snapshot is over %d bytes", apierr.ErrResourceExhausted, int64(maxRestoreBytes))
		}
		if _, err := file.Write(msg.GetData()); err != nil {
			return file, false, s.store.WriteError(err)
		}
	}
}
