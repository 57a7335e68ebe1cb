package snapshot

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nimbusha/nimbus/apierr"
	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/codedistributor"
	"github.com/nimbusha/nimbus/internal/version"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// Target is what a snapshot is restored into: the cluster's session, the
// store of the nimbus that restores it (with the code, it gets the code
// its store lacks), and the cluster that nimbus belongs to ("" if it
// remembers none).
type Target struct {
	Session   *cluster.Session
	Store     *codedistributor.Store
	ClusterID string
}

// Restored says what Restore did, or, refused, what it would have done.
type Restored struct {
	Header     *clusterv1.SnapshotHeader
	Nodes      int
	Topologies int
	// Overwrite lists nodes ZooKeeper holds otherwise (at most
	// maxListed, Overwritten counts them all); Remaining lists topologies
	// ZooKeeper holds that the snapshot does not (they stay).
	Overwrite   []string
	Overwritten int
	Remaining   []string
	// Occupied says the root holds a cluster: a StormBase, or the node
	// that names a cluster. Debris (an assignment a leader wrote while
	// the root was being deleted, the directories daemons made again) is
	// overwritten without force.
	Occupied     bool
	CodeRestored []string // topologies whose code went into the store
}

// maxListed bounds the nodes a refusal names.
const maxListed = 10

// ErrRefused: the snapshot may not be restored here; nothing was written.
var ErrRefused = apierr.Sentinel("snapshot: refused", apierr.ErrWrongStatus)

// Restore puts the snapshot in file back under the target's root, in
// these steps, nothing written unless all pass: verify the whole file
// (Verify); refuse a snapshot from a newer release or another cluster;
// compare it with what the root holds, and refuse unless force when the
// root holds a cluster (a StormBase, or the node that names a cluster),
// saying what would be overwritten and what would stay; write every node, parents
// first, /versions/cluster last (the daemons in an outage see their
// cluster back only when all of it is); then, for a snapshot with the
// code, install into the store the code it lacks.
func Restore(ctx context.Context, t Target, file *os.File, force bool) (*Restored, error) {
	contents, err := verifyFrom(file)
	if err != nil {
		return nil, err
	}
	h := contents.Header
	r := &Restored{Header: h}
	if err := checkHeader(h, t.ClusterID); err != nil {
		return r, err
	}
	nodes, err := readNodes(file)
	if err != nil {
		return r, err
	}
	l := layoutOf(t.Session.Paths())
	r.Nodes, r.Topologies = len(nodes), len(l.topologies(nodes))
	if err := r.compare(ctx, t, l, nodes); err != nil {
		return r, err
	}
	if r.Occupied && !force {
		return r, fmt.Errorf("%w: the root is not empty: it holds a cluster; the snapshot would overwrite %d nodes (%s)%s; nothing was written: restore onto an empty root, or again with force",
			ErrRefused, r.Overwritten, strings.Join(r.Overwrite, ", "), r.remainingNote())
	}
	if err := t.Session.WritePersistent(ctx, nodes, l.clusterVersion); err != nil {
		return r, err
	}
	if h.GetWithCode() {
		if r.CodeRestored, err = installCode(t.Store, file); err != nil {
			return r, err
		}
	}
	return r, nil
}

func (r *Restored) remainingNote() string {
	if len(r.Remaining) == 0 {
		return ""
	}
	return fmt.Sprintf(", and %d topologies not in it would stay (%s)", len(r.Remaining), strings.Join(r.Remaining[:min(len(r.Remaining), maxListed)], ", "))
}

// checkHeader refuses a snapshot this nimbus must not restore.
func checkHeader(h *clusterv1.SnapshotHeader, clusterID string) error {
	if c, err := version.CompareReleases(version.ReleaseOf(h.GetRelease()), version.Release); err != nil || c > 0 {
		return fmt.Errorf("%w: the snapshot is of release %q, newer than this nimbus's %s: restore it with a nimbus of that release or later",
			ErrRefused, h.GetRelease(), version.Release)
	}
	if clusterID != "" && h.GetClusterId() != "" && h.GetClusterId() != clusterID {
		return fmt.Errorf("%w: the snapshot is of cluster %s (root %s), this nimbus belongs to cluster %s: restore it into that cluster",
			ErrRefused, h.GetClusterId(), h.GetRoot(), clusterID)
	}
	return nil
}

// compare fills in what the root holds otherwise than the snapshot.
func (r *Restored) compare(ctx context.Context, t Target, l layout, nodes []cluster.PersistentNode) error {
	differ, _, err := t.Session.Existing(ctx, nodes)
	if err != nil {
		return err
	}
	r.Overwritten, r.Overwrite = len(differ), differ[:min(len(differ), maxListed)]
	there, err := t.Session.ReadFor(ctx).StormIDs()
	if err != nil && !errors.Is(err, cluster.ErrNoNode) {
		return err
	}
	ours := l.topologies(nodes)
	for _, id := range there {
		if !slices.Contains(ours, id) {
			r.Remaining = append(r.Remaining, id)
		}
	}
	slices.Sort(r.Remaining)
	_, _, err = t.Session.ReadFor(ctx).ClusterVersion()
	named := err == nil || errors.Is(err, cluster.ErrInvalidPayload)
	if err != nil && !named && !errors.Is(err, cluster.ErrNoNode) {
		return err
	}
	r.Occupied = len(there) > 0 || named
	return nil
}

// verifyFrom verifies file from its start.
func verifyFrom(file *os.File) (*Contents, error) {
	if _, err := file.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return Verify(file)
}

// readNodes reads the nodes of a verified file.
func readNodes(file *os.File) ([]cluster.PersistentNode, error) {
	if _, err := file.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	var nodes []cluster.PersistentNode
	err := Read(file, func(rec *clusterv1.SnapshotRecord) error {
		if n := rec.GetNode(); n != nil {
			nodes = append(nodes, cluster.PersistentNode{Path: n.GetPath(), Data: n.GetData()})
		}
		return nil
	})
	return nodes, err
}

// bundle is one topology's code in a snapshot: its files by name.
type bundle struct {
	id    string
	files map[string]*bytes.Buffer
}

// installCode reads a verified file's code again, one topology at a time
// (Take writes each one's files together), installs into store each one
// it does not hold verified, checked against its meta, and lists them. One
// topology's code is in memory at a time.
func installCode(store *codedistributor.Store, file *os.File) ([]string, error) {
	if _, err := file.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	var installed []string
	cur := bundle{}
	done := func() error {
		if cur.id == "" {
			return nil
		}
		ok, err := installBundle(store, cur)
		if ok {
			installed = append(installed, cur.id)
		}
		return err
	}
	err := Read(file, func(rec *clusterv1.SnapshotRecord) error {
		f := rec.GetFile()
		if f == nil {
			return nil
		}
		if f.GetTopologyId() != cur.id {
			if err := done(); err != nil {
				return err
			}
			cur = bundle{id: f.GetTopologyId(), files: map[string]*bytes.Buffer{}}
		}
		buf := cur.files[f.GetName()]
		if buf == nil {
			buf = new(bytes.Buffer)
			cur.files[f.GetName()] = buf
		}
		if f.GetOffset() != int64(buf.Len()) {
			return fmt.Errorf("%w: %s of %s: a piece at %d after %d bytes", ErrInvalid, f.GetName(), f.GetTopologyId(), f.GetOffset(), buf.Len())
		}
		buf.Write(f.GetData())
		return nil
	})
	if err == nil {
		err = done()
	}
	return installed, err
}

// installBundle installs b into store unless it holds it verified; true
// when it did.
func installBundle(store *codedistributor.Store, b bundle) (bool, error) {
	raw := b.files[metaName]
	if raw == nil {
		return false, nil
	}
	sum := sha256.Sum256(raw.Bytes())
	digest := sum[:]
	if store.Verify(b.id, digest) == nil {
		return false, nil // held already
	}
	meta, err := codedistributor.DecodeMeta(raw.Bytes(), digest)
	if err != nil {
		return false, fmt.Errorf("%w: the meta of %s: %v", ErrInvalid, b.id, err)
	}
	return true, install(store, b.id, meta, digest, b)
}

// install writes bundle b of topology id into the store and verifies it.
func install(store *codedistributor.Store, id string, meta *clusterv1.CodeMeta, digest []byte, b bundle) error {
	tmp, err := store.NewTemp()
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for _, f := range meta.GetFiles() {
		data := b.files[f.GetName()]
		if data == nil {
			return fmt.Errorf("%w: %s of %s is listed in its meta but not in the snapshot", ErrInvalid, f.GetName(), id)
		}
		if err := os.WriteFile(filepath.Join(tmp, f.GetName()), data.Bytes(), 0o644); err != nil {
			return err
		}
	}
	if _, err := store.Install(tmp, id, meta); err != nil {
		return err
	}
	if err := store.Verify(id, digest); err != nil {
		_ = store.Remove(id)
		return fmt.Errorf("%w: the code of %s does not match its meta: %v", ErrInvalid, id, err)
	}
	return nil
}
