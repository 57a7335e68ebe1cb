package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/codedistributor"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// metaName is the name a bundle's meta has in a snapshot: the stored
// bytes, whose hash is the digest the StormBase names.
const metaName = "meta.pb"

// Source is what a snapshot is taken from: the cluster's session and a
// nimbus's store (the leader's holds every live topology's code).
type Source struct {
	Session *cluster.Session
	Store   *codedistributor.Store
}

// Taken says what Take wrote.
type Taken struct {
	Header     *clusterv1.SnapshotHeader
	Nodes      int
	Topologies int
	// NotHeld lists the topologies whose code the store did not hold
	// (LOST ones, say): their nodes are in the snapshot, their spec is not.
	NotHeld []string
}

// Take writes a snapshot of src to w: every persistent node under the
// root at one point in time (cluster.Session.ReadPersistent), then, for
// each topology, its meta and spec from the store, and with withCode every
// other file of its code. h says who takes it; the rest of the header is
// filled in here.
func Take(ctx context.Context, src Source, w io.Writer, h *clusterv1.SnapshotHeader, withCode bool) (*Taken, error) {
	nodes, zxid, err := src.Session.ReadPersistent(ctx)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	h.Zxid, h.TakenUnixMs, h.WithCode, h.Root = zxid, time.Now().UnixMilli(), withCode, src.Session.Paths().Root
	layout := layoutOf(src.Session.Paths())
	h.ClusterId = layout.clusterID(nodes)
	t := &Taken{Header: h, Nodes: len(nodes)}
	sw := NewWriter(w, h)
	for _, n := range nodes {
		if err := sw.Node(n.Path, n.Data); err != nil {
			return nil, err
		}
	}
	for _, id := range layout.topologies(nodes) {
		held, err := writeCode(sw, src.Store, id, withCode)
		if err != nil {
			return nil, err
		}
		if !held {
			t.NotHeld = append(t.NotHeld, id)
		}
		t.Topologies++
	}
	return t, sw.Close()
}

// writeCode adds topology id's meta and spec, and with all its other
// files, from store; false when the store does not hold its code.
func writeCode(sw *Writer, store *codedistributor.Store, id string, all bool) (bool, error) {
	raw, meta, _, err := store.Meta(id)
	if errors.Is(err, codedistributor.ErrNotHeld) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("snapshot: the code of %s: %w", id, err)
	}
	if err := sw.File(id, metaName, strings.NewReader(string(raw))); err != nil {
		return false, err
	}
	for _, f := range meta.GetFiles() {
		if f.GetName() != codedistributor.SpecFile && !all {
			continue
		}
		file, _, err := store.Open(id, f.GetName())
		if err != nil {
			return false, fmt.Errorf("snapshot: the code of %s: %w", id, err)
		}
		err = sw.File(id, f.GetName(), file)
		file.Close()
		if err != nil {
			return false, err
		}
	}
	return true, nil
}

// layout is where, relative to the root, a snapshot's nodes of note are.
type layout struct{ storms, clusterVersion string }

func layoutOf(p cluster.Paths) layout {
	rel := func(abs string) string { return strings.TrimPrefix(abs, p.Root+"/") }
	return layout{storms: rel(p.Storms()), clusterVersion: rel(p.ClusterVersion())}
}

// topologies lists the topology ids among nodes (storms/<id>), in order.
func (l layout) topologies(nodes []cluster.PersistentNode) []string {
	var ids []string
	for _, n := range nodes {
		if id, ok := strings.CutPrefix(n.Path, l.storms+"/"); ok && !strings.Contains(id, "/") {
			ids = append(ids, id)
		}
	}
	return ids
}

// clusterID is the id /versions/cluster names among nodes, "" if none.
func (l layout) clusterID(nodes []cluster.PersistentNode) string {
	for _, n := range nodes {
		if n.Path == l.clusterVersion {
			v := new(clusterv1.ClusterVersion)
			if cluster.Decode(n.Path, n.Data, v) == nil {
				return v.GetClusterId()
			}
		}
	}
	return ""
}
