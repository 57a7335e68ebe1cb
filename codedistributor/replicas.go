package codedistributor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/nimbusha/nimbus/cluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// Replica is a node that holds a topology's verified code.
type Replica struct {
	Addr   string // host:port of its CodeService
	Digest []byte
}

// ErrNoDistribution: the topology's distribution node is gone (killed, or
// an abandoned submission was cleaned up).
var ErrNoDistribution = errors.New("codedistributor: no code distribution for topology")

// Replicas reads the replicas of a topology from ZooKeeper and, if watch,
// sets a watch on the list. Unreadable replica nodes are skipped. It is
// made on behalf of a request, so it is bounded by ctx's deadline
// (cluster.Call): a ZooKeeper that does not answer in time gives
// cluster.ErrUnavailable.
func Replicas(ctx context.Context, sess *cluster.Session, topologyID string, watch bool) ([]Replica, <-chan zk.Event, error) {
	type listing struct {
		replicas []Replica
		watch    <-chan zk.Event
	}
	l, err := cluster.Call(ctx, sess, "list the replicas of "+topologyID, func(conn *zk.Conn) (listing, error) {
		replicas, ch, err := readReplicas(conn, sess.Paths(), topologyID, watch)
		return listing{replicas, ch}, err
	})
	return l.replicas, l.watch, err
}

// readReplicas is Replicas on conn, unbounded: one listing, then one Get
// per replica, pipelined by go-zookeeper.
func readReplicas(conn *zk.Conn, paths cluster.Paths, topologyID string, watch bool) ([]Replica, <-chan zk.Event, error) {
	dir := paths.Distribution(topologyID)
	var (
		names []string
		ch    <-chan zk.Event
		err   error
	)
	if watch {
		names, _, ch, err = conn.ChildrenW(dir)
	} else {
		names, _, err = conn.Children(dir)
	}
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil, fmt.Errorf("%w %s", ErrNoDistribution, topologyID)
	}
	if err != nil {
		return nil, nil, err
	}
	out := make([]Replica, 0, len(names))
	for _, name := range names {
		data, _, err := conn.Get(dir + "/" + name)
		if err != nil {
			continue // gone meanwhile
		}
		info := new(clusterv1.ReplicaInfo)
		if cluster.Decode(dir+"/"+name, data, info) != nil {
			continue
		}
		out = append(out, Replica{Addr: name, Digest: info.GetCodeMetaDigest()})
	}
	return out, ch, nil
}

// Sources returns, in random order so downloads spread over the replicas,
// the replicas other than self that hold exactly digest. Fetches call it,
// on no request's behalf: it waits for ZooKeeper as long as go-zookeeper
// does, as it always has.
func Sources(sess *cluster.Session, topologyID string, digest []byte, self string) ([]string, error) {
	replicas, _, err := readReplicas(sess.Conn(), sess.Paths(), topologyID, false)
	if err != nil {
		return nil, err
	}
	var addrs []string
	for _, r := range replicas {
		if r.Addr != self && bytes.Equal(r.Digest, digest) {
			addrs = append(addrs, r.Addr)
		}
	}
	rand.Shuffle(len(addrs), func(i, j int) { addrs[i], addrs[j] = addrs[j], addrs[i] })
	return addrs, nil
}

func countMatching(replicas []Replica, digest []byte) int {
	n := 0
	for _, r := range replicas {
		if bytes.Equal(r.Digest, digest) {
			n++
		}
	}
	return n
}

// WaitReplication blocks until at least min replicas hold digest, driven
// by a watch on the replica list, until the wait ends at until (zero: no
// end), or until ctx ends. It returns the count reached and whether the
// wait ended first; the error is ctx's when it ended first. Each read is
// bounded by ctx's deadline, the request's, not by until: a read late in
// the wait gets the request's budget. When ZooKeeper does not answer in
// time (the session still up) it returns cluster.ErrUnavailable at once,
// before the deadline, rather than wait it out.
func WaitReplication(ctx context.Context, sess *cluster.Session, topologyID string, digest []byte, min int, until time.Time) (int, bool, error) {
	var waitEnded <-chan time.Time
	if !until.IsZero() {
		timer := time.NewTimer(time.Until(until))
		defer timer.Stop()
		waitEnded = timer.C
	}
	for {
		replicas, ch, err := Replicas(ctx, sess, topologyID, true)
		n := countMatching(replicas, digest)
		if errors.Is(err, ErrNoDistribution) {
			return n, false, err
		}
		if err == nil && n >= min {
			return n, false, nil
		}
		state, _, changed := sess.State()
		if errors.Is(err, cluster.ErrUnavailable) && state == zk.StateHasSession && ctx.Err() == nil {
			return n, false, err // slow, not disconnected: the budget is spent
		}
		// A failed read (disconnected) is retried on the next session
		// change; a watch is armed otherwise.
		select {
		case <-ctx.Done():
			return n, false, ctx.Err()
		case <-waitEnded:
			return n, true, nil
		case <-ch:
		case <-changed:
		}
	}
}
