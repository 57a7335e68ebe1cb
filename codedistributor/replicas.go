package codedistributor

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/nimbusha/nimbus/cluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// ErrNoDistribution: the topology's distribution node is gone (killed, or
// an abandoned submission was cleaned up).
var ErrNoDistribution = errors.New("codedistributor: no code distribution for topology")

// Sources returns, in random order so downloads spread over the replicas,
// the replicas other than self that hold exactly digest, read afresh.
// Fetches call it, on no request's behalf: it waits for ZooKeeper as long
// as go-zookeeper does.
// For KindBlob, topologyID is a blob's key and the replicas are the
// nimbuses under /blobstore/<key>.
func Sources(sess *cluster.Session, kind Kind, topologyID string, digest []byte, self string) ([]string, error) {
	read := sess.Read()
	var replicas map[string]*clusterv1.ReplicaInfo
	var err error
	if kind == KindBlob {
		replicas, err = read.BlobReplicas(topologyID)
	} else {
		replicas, err = read.Replicas(topologyID)
	}
	if errors.Is(err, cluster.ErrNoNode) {
		return nil, fmt.Errorf("%w %s", ErrNoDistribution, topologyID)
	}
	if err != nil {
		return nil, err
	}
	var addrs []string
	for addr, r := range replicas {
		if addr != self && cluster.Holds(r, digest) {
			addrs = append(addrs, addr)
		}
	}
	rand.Shuffle(len(addrs), func(i, j int) { addrs[i], addrs[j] = addrs[j], addrs[i] })
	return addrs, nil
}
