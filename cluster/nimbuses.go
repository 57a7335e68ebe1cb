package cluster

import (
	"log/slog"
	"maps"
	"net"
	"slices"
	"sort"
	"strconv"

	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// HostPort is a nimbus's address as it appears in ZooKeeper paths.
func HostPort(info *clusterv1.NimbusInfo) string {
	return net.JoinHostPort(info.GetHost(), strconv.Itoa(int(info.GetPort())))
}

// NewNimbusInfoCache watches a directory of NimbusInfo nodes: /nimbuses
// (by host:port) or /leader-lock (by lock node name).
func NewNimbusInfoCache(sess *Session, dir string, log *slog.Logger) *DirCache[*clusterv1.NimbusInfo] {
	return NewDirCache(sess, dir, func() *clusterv1.NimbusInfo { return new(clusterv1.NimbusInfo) }, log)
}

// LockEntry is one node of the leader-lock queue.
type LockEntry struct {
	Name string
	Seq  int64
	Info *clusterv1.NimbusInfo // nil when unknown or undecodable
}

// Epoch is the epoch a leader holding this node has: its sequence number
// plus one, so that zero always means "no leader".
func (e LockEntry) Epoch() int64 { return e.Seq + 1 }

// LockOrder orders lock node names by sequence number: the first one
// leads. Names that do not parse are left out.
func LockOrder(names []string) []LockEntry {
	q := make([]LockEntry, 0, len(names))
	for _, name := range names {
		if seq, err := LockSeq(name); err == nil {
			q = append(q, LockEntry{Name: name, Seq: seq})
		}
	}
	sort.Slice(q, func(i, j int) bool { return q[i].Seq < q[j].Seq })
	return q
}

// Queue orders a snapshot of the leader-lock directory, payloads included.
func Queue(nodes map[string]*clusterv1.NimbusInfo) []LockEntry {
	q := LockOrder(slices.Collect(maps.Keys(nodes)))
	for i := range q {
		q[i].Info = nodes[q[i].Name]
	}
	return q
}
