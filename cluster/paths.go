package cluster

import (
	"fmt"
	"path"
	"strconv"
	"strings"
)

// Paths builds the ZooKeeper paths under storm.zookeeper.root.
type Paths struct{ Root string }

// LeaderLock is the directory of the leader election's lock nodes.
func (p Paths) LeaderLock() string { return p.Root + "/leader-lock" }

// Nimbuses is the directory where every live nimbus registers.
func (p Paths) Nimbuses() string { return p.Root + "/nimbuses" }

// Nimbus is one nimbus's registration node.
func (p Paths) Nimbus(hostPort string) string { return p.Nimbuses() + "/" + hostPort }

// Storms is the directory of active topologies.
func (p Paths) Storms() string { return p.Root + "/storms" }

// CodeDistributor is the directory of code replicas, by topology.
func (p Paths) CodeDistributor() string { return p.Root + "/code-distributor" }

// Distribution is the node that asks every nimbus to hold a topology's
// code; its children are the replicas.
func (p Paths) Distribution(topologyID string) string { return p.CodeDistributor() + "/" + topologyID }

// Replica is one node's claim to hold a topology's verified code.
func (p Paths) Replica(topologyID, hostPort string) string {
	return p.Distribution(topologyID) + "/" + hostPort
}

// Storm is one topology's StormBase.
func (p Paths) Storm(topologyID string) string { return p.Storms() + "/" + topologyID }

// Swarms holds one directory per topology distributed by BitTorrent.
func (p Paths) Swarms() string { return p.Root + "/bittorrent" }

// Swarm lists the BitTorrent peers (host:port) that hold or fetch a
// topology's code.
func (p Paths) Swarm(topologyID string) string { return p.Swarms() + "/" + topologyID }

// BlobStore is the directory of blobs, by key (BlobMeta); each blob's
// children are the nimbuses holding a version (ReplicaInfo).
func (p Paths) BlobStore() string { return p.Root + "/blobstore" }

// Blob is one blob's node.
func (p Paths) Blob(key string) string { return p.BlobStore() + "/" + key }

// BlobReplica is one nimbus's claim to hold a version of a blob.
func (p Paths) BlobReplica(key, hostPort string) string { return p.Blob(key) + "/" + hostPort }

// BlobSwarms holds one directory per blob distributed by BitTorrent.
func (p Paths) BlobSwarms() string { return p.Root + "/bittorrent-blobs" }

// BlobSwarm lists the BitTorrent peers (host:port) that hold or fetch a
// version of a blob.
func (p Paths) BlobSwarm(key string) string { return p.BlobSwarms() + "/" + key }

// Assignment is one topology's assignment.
func (p Paths) Assignment(topologyID string) string { return p.Assignments() + "/" + topologyID }

// Assignments is the directory of assignments, by topology.
func (p Paths) Assignments() string { return p.Root + "/assignments" }

// Supervisors is the directory where every live supervisor registers.
func (p Paths) Supervisors() string { return p.Root + "/supervisors" }

// Supervisor is one supervisor's registration and heartbeat node.
func (p Paths) Supervisor(id string) string { return p.Supervisors() + "/" + id }

// Challenges is where a follower that found the leader's port refusing
// asks it, through ZooKeeper, whether it is alive (package depose).
func (p Paths) Challenges() string { return p.Root + "/challenges" }

// LostDir is the directory of LOST marks, by topology: topologies whose
// code no nimbus and no supervisor holds, which block no leadership.
func (p Paths) LostDir() string { return p.Root + "/lost" }

// Versions is the directory of what the cluster says about versions:
// /versions/cluster, the cluster version (ClusterVersion).
func (p Paths) Versions() string { return p.Root + "/versions" }

// ClusterVersion is the node of the cluster version, which the leader
// writes.
func (p Paths) ClusterVersion() string { return p.Versions() + "/" + ClusterVersionNode }

// Lost is one topology's LOST mark.
func (p Paths) Lost(id string) string { return p.LostDir() + "/" + id }

// LockNodeSuffix precedes the sequence number of a lock node:
// <protected-prefix>-lock-<seq>.
const LockNodeSuffix = "lock-"

// LockSeq parses the sequence number of a lock node's name. ZooKeeper
// appends ten digits; they run out at 2^31-1, which a cluster will not
// reach by elections alone.
func LockSeq(name string) (int64, error) {
	name = path.Base(name)
	i := strings.LastIndex(name, LockNodeSuffix)
	if i < 0 {
		return 0, fmt.Errorf("cluster: %q is not a lock node", name)
	}
	seq, err := strconv.ParseInt(name[i+len(LockNodeSuffix):], 10, 64)
	if err != nil || seq < 0 {
		return 0, fmt.Errorf("cluster: %q is not a lock node: bad sequence", name)
	}
	return seq, nil
}
