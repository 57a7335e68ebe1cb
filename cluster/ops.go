package cluster

import (
	"github.com/go-zookeeper/zk"
	"google.golang.org/protobuf/proto"

	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// Op is one operation of a ZooKeeper multi: the writes that only the leader
// may make, which leader.Term.Multi applies behind its fence. They are built
// here, by what they write, so that payload encoding, paths and the ACL of
// new nodes are decided in one place.
type Op struct{ req any }

// Request is the go-zookeeper request, for whoever applies the multi.
func (o Op) Request() any { return o.req }

// AnyVersion as a version matches whatever version the node has.
const AnyVersion int32 = -1

// Ops builds the operations on the nodes of one cluster; see Session.Ops.
type Ops struct {
	paths Paths
	acl   []zk.ACL // of the nodes created: Session.ACL
}

// Ops returns the builders for this session's cluster.
func (s *Session) Ops() Ops { return Ops{paths: s.paths, acl: s.access.acl} }

func (o Ops) create(path string, m proto.Message) Op {
	return Op{&zk.CreateRequest{Path: path, Data: Encode(m), Acl: o.acl}}
}

func set(path string, m proto.Message, version int32) Op {
	return Op{&zk.SetDataRequest{Path: path, Data: Encode(m), Version: version}}
}

func del(path string) Op { return Op{&zk.DeleteRequest{Path: path, Version: AnyVersion}} }

// ClusterVersionNode is the name of the cluster version's node under
// /versions.
const ClusterVersionNode = "cluster"

// CreateClusterVersion writes the first cluster version.
func (o Ops) CreateClusterVersion(v *clusterv1.ClusterVersion) Op {
	return o.create(o.paths.ClusterVersion(), v)
}

// SetClusterVersion replaces the cluster version if the node is at
// version.
func (o Ops) SetClusterVersion(v *clusterv1.ClusterVersion, version int32) Op {
	return set(o.paths.ClusterVersion(), v, version)
}

// CreateStorm commits a topology: its StormBase at /storms/<id>.
func (o Ops) CreateStorm(id string, base *clusterv1.StormBase) Op {
	return o.create(o.paths.Storm(id), base)
}

// SetStorm replaces a topology's StormBase if the node is at version.
func (o Ops) SetStorm(id string, base *clusterv1.StormBase, version int32) Op {
	return set(o.paths.Storm(id), base, version)
}

// CheckStorm changes nothing, but fails the multi unless the topology's
// StormBase is at version.
func (o Ops) CheckStorm(id string, version int32) Op {
	return Op{&zk.CheckVersionRequest{Path: o.paths.Storm(id), Version: version}}
}

// DeleteStorm removes a topology's StormBase.
func (o Ops) DeleteStorm(id string) Op { return del(o.paths.Storm(id)) }

// DeleteStormAt removes a topology's StormBase if it is still at version.
func (o Ops) DeleteStormAt(id string, version int32) Op {
	return Op{&zk.DeleteRequest{Path: o.paths.Storm(id), Version: version}}
}

// CreateAssignment writes a topology's first assignment.
func (o Ops) CreateAssignment(id string, a *clusterv1.Assignment) Op {
	return o.create(o.paths.Assignment(id), a)
}

// SetAssignment replaces a topology's assignment, whatever its version.
func (o Ops) SetAssignment(id string, a *clusterv1.Assignment) Op {
	return set(o.paths.Assignment(id), a, AnyVersion)
}

// DeleteAssignment removes a topology's assignment.
func (o Ops) DeleteAssignment(id string) Op { return del(o.paths.Assignment(id)) }

// CreateLost marks a topology LOST (package codesync).
func (o Ops) CreateLost(id string, mark *clusterv1.LostMark) Op {
	return o.create(o.paths.Lost(id), mark)
}

// DeleteLost removes a topology's LOST mark if it is still at version
// (AnyVersion: whatever it is).
func (o Ops) DeleteLost(id string, version int32) Op {
	return Op{&zk.DeleteRequest{Path: o.paths.Lost(id), Version: version}}
}

// CreateDistribution asks every nimbus to hold a topology's code.
func (o Ops) CreateDistribution(id string, d *clusterv1.CodeDistribution) Op {
	return o.create(o.paths.Distribution(id), d)
}

// CreateBlob creates a blob's node with its first version.
func (o Ops) CreateBlob(key string, m *clusterv1.BlobMeta) Op {
	return o.create(o.paths.Blob(key), m)
}

// SetBlob writes a blob's node at the data version read (a new version,
// ACL or replication factor).
func (o Ops) SetBlob(key string, m *clusterv1.BlobMeta, version int32) Op {
	return set(o.paths.Blob(key), m, version)
}

// DeleteBlob removes a blob's node at the data version read, and the
// replicas registered under it (host:port), children first.
func (o Ops) DeleteBlob(key string, version int32, replicas []string) []Op {
	ops := make([]Op, 0, len(replicas)+1)
	for _, r := range replicas {
		ops = append(ops, del(o.paths.BlobReplica(key, r)))
	}
	return append(ops, Op{&zk.DeleteRequest{Path: o.paths.Blob(key), Version: version}})
}

// DeleteDistribution removes a topology's distribution and the replicas
// registered under it (by their node names, host:port), children first.
func (o Ops) DeleteDistribution(id string, replicas []string) []Op {
	ops := make([]Op, 0, len(replicas)+1)
	for _, r := range replicas {
		ops = append(ops, del(o.paths.Replica(id, r)))
	}
	return append(ops, del(o.paths.Distribution(id)))
}
