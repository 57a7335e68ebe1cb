package cluster

import (
	"context"
	"errors"

	"github.com/go-zookeeper/zk"
	"golang.org/x/sync/errgroup"
	"google.golang.org/protobuf/proto"

	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// Reader reads the nodes of the layout (section 3.1 of
// docs/ARCHITECTURE.md), one method per kind of node, each decoding its
// payload. It is the one place that reads a node afresh; the caches
// (DirCache, ReplicaCache) are the other readers, kept by watches. A node
// that is not there is ErrNoNode; a payload that does not decode wraps
// ErrInvalidPayload.
//
// Session.Read's reads wait for ZooKeeper as long as go-zookeeper does:
// for loops that serve no request. Session.ReadFor's are each bounded by
// the request's deadline (Call): UNAVAILABLE in time rather than an answer
// too late.
type Reader struct {
	s   *Session
	ctx context.Context // nil: on no request's behalf
}

// Read returns a Reader for loops that serve no request.
func (s *Session) Read() Reader { return Reader{s: s} }

// ReadFor returns a Reader whose every read is bounded by ctx, a
// request's context (Call).
func (s *Session) ReadFor(ctx context.Context) Reader { return Reader{s: s, ctx: ctx} }

// Storm is topology id's StormBase and its data version.
func (r Reader) Storm(id string) (*clusterv1.StormBase, int32, error) {
	return readNode(r, r.s.paths.Storm(id), new(clusterv1.StormBase))
}

// HasStorm reports whether topology id has a StormBase.
func (r Reader) HasStorm(id string) (bool, error) { return exists(r, r.s.paths.Storm(id)) }

// StormIDs lists /storms: every committed topology.
func (r Reader) StormIDs() ([]string, error) { return children(r, r.s.paths.Storms()) }

// Lost is topology id's LOST mark and its data version.
func (r Reader) Lost(id string) (*clusterv1.LostMark, int32, error) {
	return readNode(r, r.s.paths.Lost(id), new(clusterv1.LostMark))
}

// HasLost reports whether topology id has a LOST mark.
func (r Reader) HasLost(id string) (bool, error) { return exists(r, r.s.paths.Lost(id)) }

// LostMarks reads every LOST mark, by topology id; marks that do not
// decode are left out, and a missing /lost has none.
func (r Reader) LostMarks() (map[string]*clusterv1.LostMark, error) {
	ids, err := children(r, r.s.paths.LostDir())
	if errors.Is(err, ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	marks := make(map[string]*clusterv1.LostMark, len(ids))
	for _, id := range ids {
		mark, _, err := r.Lost(id)
		switch {
		case errors.Is(err, ErrNoNode), errors.Is(err, ErrInvalidPayload): // gone meanwhile; junk
		case err != nil:
			return nil, err
		default:
			marks[id] = mark
		}
	}
	return marks, nil
}

// LeaderRegistration reads the registration (/nimbuses/<host:port>) of
// the nimbus at the head of the leader queue; ErrNoNode when nobody is
// queued or the head is not registered.
func (r Reader) LeaderRegistration() (*clusterv1.NimbusInfo, error) {
	names, err := children(r, r.s.paths.LeaderLock())
	if err != nil {
		return nil, err
	}
	q := LockOrder(names)
	if len(q) == 0 {
		return nil, ErrNoNode
	}
	head, _, err := readNode(r, r.s.paths.LeaderLock()+"/"+q[0].Name, new(clusterv1.NimbusInfo))
	if err != nil {
		return nil, err
	}
	reg, _, err := readNode(r, r.s.paths.Nimbus(HostPort(head)), new(clusterv1.NimbusInfo))
	return reg, err
}

// ClusterVersion reads the cluster version and its node's version;
// ErrNoNode when no leader has written one.
func (r Reader) ClusterVersion() (*clusterv1.ClusterVersion, int32, error) {
	return readNode(r, r.s.paths.ClusterVersion(), new(clusterv1.ClusterVersion))
}

// Assignment is topology id's assignment.
func (r Reader) Assignment(id string) (*clusterv1.Assignment, error) {
	a, _, err := readNode(r, r.s.paths.Assignment(id), new(clusterv1.Assignment))
	return a, err
}

// HasAssignment reports whether topology id has an assignment.
func (r Reader) HasAssignment(id string) (bool, error) { return exists(r, r.s.paths.Assignment(id)) }

// HasDistribution reports whether topology id has a code distribution.
func (r Reader) HasDistribution(id string) (bool, error) {
	return exists(r, r.s.paths.Distribution(id))
}

// Replicas reads the replicas registered under topology id's
// distribution, by node name (host:port); one that does not decode has a
// nil payload, one gone since the listing is left out. A topology without
// a distribution is ErrNoNode.
func (r Reader) Replicas(id string) (map[string]*clusterv1.ReplicaInfo, error) {
	return r.replicasUnder(r.s.paths.Distribution(id))
}

// replicasUnder reads the ReplicaInfo children of dir.
func (r Reader) replicasUnder(dir string) (map[string]*clusterv1.ReplicaInfo, error) {
	names, err := children(r, dir)
	if err != nil {
		return nil, err
	}
	replicas := make(map[string]*clusterv1.ReplicaInfo, len(names))
	for _, name := range names {
		info, _, err := readNode(r, dir+"/"+name, new(clusterv1.ReplicaInfo))
		switch {
		case errors.Is(err, ErrNoNode): // unregistered meanwhile
		case errors.Is(err, ErrInvalidPayload):
			replicas[name] = nil
		case err != nil:
			return nil, err
		default:
			replicas[name] = info
		}
	}
	return replicas, nil
}

// Blob is a blob's BlobMeta and its data version.
func (r Reader) Blob(key string) (*clusterv1.BlobMeta, int32, error) {
	return readNode(r, r.s.paths.Blob(key), new(clusterv1.BlobMeta))
}

// BlobKeys lists /blobstore (empty when it does not exist yet).
func (r Reader) BlobKeys() ([]string, error) {
	keys, err := children(r, r.s.paths.BlobStore())
	if errors.Is(err, ErrNoNode) {
		return nil, nil
	}
	return keys, err
}

// BlobReplicas returns the nimbuses registered as holding a version of a
// blob, as Replicas does for a topology; a blob that does not exist is
// ErrNoNode.
func (r Reader) BlobReplicas(key string) (map[string]*clusterv1.ReplicaInfo, error) {
	return r.replicasUnder(r.s.paths.Blob(key))
}

// ReplicaNames lists the replicas registered under topology id's
// distribution (host:port) without reading them. A topology without a
// distribution is ErrNoNode.
func (r Reader) ReplicaNames(id string) ([]string, error) {
	return children(r, r.s.paths.Distribution(id))
}

// DistributionCounter is the child version of /code-distributor: it grows
// with every distribution created or deleted there, and only the leader
// changes it, so it numbers submissions across leaders. A missing
// directory (deleted by hand; the caches create it again) counts 0.
func (r Reader) DistributionCounter() (int64, error) {
	dir := r.s.paths.CodeDistributor()
	stat, err := run(r, "stat "+dir, func(conn *zk.Conn) (*zk.Stat, error) {
		_, stat, err := conn.Exists(dir)
		return stat, err
	})
	if err != nil {
		return 0, err
	}
	return int64(stat.Cversion), nil
}

// SupervisorIDs lists the registered supervisors; a missing /supervisors
// has none.
func (r Reader) SupervisorIDs() ([]string, error) {
	ids, err := children(r, r.s.paths.Supervisors())
	if errors.Is(err, ErrNoNode) {
		return nil, nil
	}
	return ids, err
}

// Supervisor is supervisor id's registration.
func (r Reader) Supervisor(id string) (*clusterv1.SupervisorInfo, error) {
	info, _, err := readNode(r, r.s.paths.Supervisor(id), new(clusterv1.SupervisorInfo))
	return info, err
}

// SwarmIDs lists the swarms in directory swarms (Paths.Swarms: the
// topologies with a BitTorrent swarm; Paths.BlobSwarms: the blobs); a
// missing directory has none.
func (r Reader) SwarmIDs(swarms string) ([]string, error) {
	ids, err := children(r, swarms)
	if errors.Is(err, ErrNoNode) {
		return nil, nil
	}
	return ids, err
}

// SwarmMembers lists the members (host:port) of swarm id in directory
// swarms (Paths.Swarms or Paths.BlobSwarms) and, with watch, returns a
// Watch on the list.
func (r Reader) SwarmMembers(swarms, id string, watch bool) ([]string, Watch, error) {
	dir := swarms + "/" + id
	if !watch {
		members, err := children(r, dir)
		return members, nil, err
	}
	type listed struct {
		members []string
		watch   Watch
	}
	l, err := run(r, "watch "+dir, func(conn *zk.Conn) (listed, error) {
		members, _, w, err := conn.ChildrenW(dir)
		return listed{members, w}, err
	})
	return l.members, l.watch, err
}

// Listing is a directory as one listing saw it, with the data version of
// each child read after it (a child gone by then is left out); a cache
// waits for it with DirCache.AwaitVersions.
type Listing struct {
	stat     *zk.Stat
	Versions map[string]int32
}

// listingConcurrency bounds the version reads of one listing.
const listingConcurrency = 16

// SyncedStorms syncs this session's ZooKeeper server with the leader of
// the ensemble, so it has every write committed before the call, then
// lists /storms and reads each topology's version: what a linearizable
// read waits for its cache to reach.
func (r Reader) SyncedStorms() (Listing, error) {
	dir := r.s.paths.Storms()
	return run(r, "sync and list "+dir, func(conn *zk.Conn) (Listing, error) {
		if _, err := conn.Sync(dir); err != nil {
			return Listing{}, err
		}
		ids, stat, err := conn.Children(dir)
		if err != nil {
			return Listing{}, err
		}
		versions, err := versionsOf(conn, dir, ids)
		return Listing{stat, versions}, err
	})
}

// versionsOf reads the data version of each child of dir,
// listingConcurrency at a time (go-zookeeper pipelines them); a child
// deleted since the listing is left out.
func versionsOf(conn *zk.Conn, dir string, ids []string) (map[string]int32, error) {
	versions := make([]int32, len(ids))
	found := make([]bool, len(ids))
	var g errgroup.Group
	g.SetLimit(listingConcurrency)
	for i, id := range ids {
		g.Go(func() error {
			ok, stat, err := conn.Exists(dir + "/" + id)
			if err != nil {
				return err
			}
			if ok {
				versions[i], found[i] = stat.Version, true
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	want := make(map[string]int32, len(ids))
	for i, id := range ids {
		if found[i] {
			want[id] = versions[i]
		}
	}
	return want, nil
}

// run runs fn on the session's connection, bounded by r's request if it
// has one.
func run[T any](r Reader, what string, fn func(*zk.Conn) (T, error)) (T, error) {
	if r.ctx == nil {
		return fn(r.s.Conn())
	}
	return Call(r.ctx, r.s, what, fn)
}

// readNode reads path into m, and its data version: also when the payload
// does not decode (ErrInvalidPayload), so that its writer can replace it.
func readNode[M proto.Message](r Reader, path string, m M) (M, int32, error) {
	var zero M
	stat, err := run(r, "read "+path, func(conn *zk.Conn) (*zk.Stat, error) {
		data, stat, err := conn.Get(path)
		if err != nil {
			return nil, err
		}
		return stat, Decode(path, data, m)
	})
	switch {
	case err != nil && stat != nil:
		return zero, stat.Version, err
	case err != nil:
		return zero, 0, err
	}
	return m, stat.Version, nil
}

func exists(r Reader, path string) (bool, error) {
	return run(r, "stat "+path, func(conn *zk.Conn) (bool, error) {
		ok, _, err := conn.Exists(path)
		return ok, err
	})
}

func children(r Reader, dir string) ([]string, error) {
	return run(r, "list "+dir, func(conn *zk.Conn) ([]string, error) {
		names, _, err := conn.Children(dir)
		return names, err
	})
}
