package cluster

import (
	"log/slog"
	"net"
	"sort"
	"strconv"

	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// HostPort is a nimbus's address as it appears in ZooKeeper paths.
func HostPort(info *clusterv1.NimbusInfo) string {
	return net.JoinHostPort(info.GetHost(), strconv.Itoa(int(info.GetPort())))
}

// NewNimbusCache watches /nimbuses: every live nimbus, by host:port.
func NewNimbusCache(sess *Session, log *slog.Logger) *DirCache[*clusterv1.NimbusInfo] {
	return NewDirCache(sess, sess.Paths().Nimbuses(), func() *clusterv1.NimbusInfo { return new(clusterv1.NimbusInfo) }, log)
}

// NewLockCache watches /leader-lock: the election's queue, by node name.
func NewLockCache(sess *Session, log *slog.Logger) *DirCache[*clusterv1.NimbusInfo] {
	return NewDirCache(sess, sess.Paths().LeaderLock(), func() *clusterv1.NimbusInfo { return new(clusterv1.NimbusInfo) }, log)
}

// LockEntry is one node of the leader-lock queue.
type LockEntry struct {
	Name string
	Seq  int64
	Info *clusterv1.NimbusInfo
}

// Epoch is the epoch a leader holding this node has: its sequence number
// plus one, so that zero always means "no leader".
func (e LockEntry) Epoch() int64 { return e.Seq + 1 }

// Queue orders lock nodes by sequence number: the first one leads. Nodes
// whose names do not parse are left out.
func Queue(nodes map[string]*clusterv1.NimbusInfo) []LockEntry {
	q := make([]LockEntry, 0, len(nodes))
	for name, info := range nodes {
		seq, err := LockSeq(name)
		if err != nil {
			continue
		}
		q = append(q, LockEntry{Name: name, Seq: seq, Info: info})
	}
	sort.Slice(q, func(i, j int) bool { return q[i].Seq < q[j].Seq })
	return q
}
