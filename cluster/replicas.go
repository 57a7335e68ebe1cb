package cluster

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/internal/notify"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// ReplicaSet keeps a directory of distributions current: each
// distribution node (payload M) and the replicas under each, by id. It runs
// one DirCache per distribution, started and stopped as distributions come
// and go. Topology code and blobs are the two kinds.
type ReplicaSet[M proto.Message] struct {
	sess *Session
	log  *slog.Logger
	dir  string
	// Distributions is the directory itself, by id.
	Distributions *DirCache[M]

	mu       sync.Mutex
	replicas map[string]*DirCache[*clusterv1.ReplicaInfo]
	gen      uint64
	changes  notify.Notifier
}

// ReplicaCache keeps /code-distributor current: every topology's
// distribution and its replicas.
type ReplicaCache = ReplicaSet[*clusterv1.CodeDistribution]

// BlobCache keeps /blobstore current: every blob and the nimbuses that
// hold a version of it.
type BlobCache = ReplicaSet[*clusterv1.BlobMeta]

// NewReplicaCache returns a cache of /code-distributor; it starts nothing.
func NewReplicaCache(sess *Session, log *slog.Logger) *ReplicaCache {
	return newReplicaSet(sess, sess.Paths().CodeDistributor(), func() *clusterv1.CodeDistribution { return new(clusterv1.CodeDistribution) }, log)
}

// NewBlobCache returns a cache of /blobstore; it starts nothing.
func NewBlobCache(sess *Session, log *slog.Logger) *BlobCache {
	return newReplicaSet(sess, sess.Paths().BlobStore(), func() *clusterv1.BlobMeta { return new(clusterv1.BlobMeta) }, log)
}

func newReplicaSet[M proto.Message](sess *Session, dir string, newMsg func() M, log *slog.Logger) *ReplicaSet[M] {
	return &ReplicaSet[M]{
		sess:          sess,
		log:           log,
		dir:           dir,
		Distributions: NewDirCache(sess, dir, newMsg, log),
		replicas:      map[string]*DirCache[*clusterv1.ReplicaInfo]{},
	}
}

// Replicas returns the replicas of a topology by host:port (a nil payload
// is an undecodable node). The map is shared and must not be modified.
func (r *ReplicaSet[M]) Replicas(topologyID string) map[string]*clusterv1.ReplicaInfo {
	r.mu.Lock()
	c := r.replicas[topologyID]
	r.mu.Unlock()
	if c == nil {
		return nil
	}
	return c.Snapshot()
}

// Changed returns a channel closed at the next change of any replica list
// or distribution.
func (r *ReplicaSet[M]) Changed() <-chan struct{} { return r.changes.Changed() }

// Gen counts the changes Changed reports: what a reader derived from the
// replica lists still holds while Gen is unchanged.
func (r *ReplicaSet[M]) Gen() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gen
}

func (r *ReplicaSet[M]) notify() {
	r.mu.Lock()
	r.gen++
	r.mu.Unlock()
	r.changes.Notify()
}

// Run keeps the cache current until ctx ends.
func (r *ReplicaSet[M]) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wg.Go(func() { _ = r.Distributions.Run(ctx) })

	stops := map[string]context.CancelFunc{}
	for {
		changed := r.Distributions.Changed()
		dists := r.Distributions.Snapshot()
		for id := range dists {
			if _, ok := stops[id]; ok {
				continue
			}
			c := NewDirCache(r.sess, r.dir+"/"+id, func() *clusterv1.ReplicaInfo { return new(clusterv1.ReplicaInfo) }, r.log)
			cctx, stop := context.WithCancel(ctx)
			stops[id] = stop
			r.mu.Lock()
			r.replicas[id] = c
			r.mu.Unlock()
			changed := c.Changed() // before it runs: its first listing is a change too
			wg.Go(func() { _ = c.Run(cctx) })
			wg.Go(func() { // forward the child's changes
				for {
					select {
					case <-changed:
						changed = c.Changed() // before notifying: no change goes unseen
						r.notify()
					case <-cctx.Done():
						return
					}
				}
			})
		}
		for id, stop := range stops {
			if _, ok := dists[id]; !ok {
				stop()
				delete(stops, id)
				r.mu.Lock()
				delete(r.replicas, id)
				r.mu.Unlock()
			}
		}
		r.notify()
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// AwaitReplicas blocks until at least min replicas of topology id hold
// digest, as this cache sees them (a watch round trip behind ZooKeeper),
// until until passes (zero: no end), or until ctx ends. It returns the
// count reached and whether until came first; the error is ctx's when ctx
// ended first, and wraps ErrNoNode when the topology's distribution, once
// seen, is gone (a new leader removed an abandoned submission's). A
// distribution this cache has not seen yet is waited for.
func (r *ReplicaSet[M]) AwaitReplicas(ctx context.Context, id string, digest []byte, min int, until time.Time) (int, bool, error) {
	var ended <-chan time.Time
	if !until.IsZero() {
		timer := time.NewTimer(time.Until(until))
		defer timer.Stop()
		ended = timer.C
	}
	seen := false
	for {
		changed := r.Changed() // before the state: no change goes unseen
		_, listed := r.Distributions.Snapshot()[id]
		n := CountHolding(r.Replicas(id), digest)
		switch {
		case listed && n >= min:
			return n, false, nil
		case listed:
			seen = true
		case seen:
			return n, false, fmt.Errorf("%w: the code distribution of %s is gone", ErrNoNode, id)
		}
		select {
		case <-ctx.Done():
			return n, false, ctx.Err()
		case <-ended:
			return CountHolding(r.Replicas(id), digest), true, nil
		case <-changed:
		}
	}
}

// CountHolding counts the replicas that hold digest.
func CountHolding(replicas map[string]*clusterv1.ReplicaInfo, digest []byte) int {
	n := 0
	for _, r := range replicas {
		if Holds(r, digest) {
			n++
		}
	}
	return n
}

// Holds reports whether replica r (nil: unreadable) registers the code of
// digest: a replica of other code counts for nothing.
func Holds(r *clusterv1.ReplicaInfo, digest []byte) bool {
	return r != nil && bytes.Equal(r.GetCodeMetaDigest(), digest)
}
