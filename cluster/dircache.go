package cluster

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/internal/notify"
)

// retryDelay paces retries of ZooKeeper reads that failed for a reason
// other than a session change (which wakes the cache by itself).
const retryDelay = 250 * time.Millisecond

// missingDirRetry paces looks for a directory that does not exist.
const missingDirRetry = time.Second

// maxReadsInFlight bounds the child reads a cache has outstanding at
// once. go-zookeeper pipelines concurrent requests on its one connection,
// so loading thousands of children takes a few round trips, not thousands.
const maxReadsInFlight = 64

// maxUnreadableLogged caps the unreadable children a cache logs one by one
// in one refresh (thousands of junk nodes would flood the log); the rest
// are counted in one line.
const maxUnreadableLogged = 20

var errDirMissing = errors.New("cluster: directory does not exist")

// DirCache keeps the children of one ZooKeeper directory and their decoded
// payloads current through watches: one watch on the directory and one on
// each child, each re-armed only after it fires, so watches never pile up.
// Reads are a pointer load; they never touch ZooKeeper. A directory that
// does not exist reads as empty until it is created.
//
// With MembersOnly the children's payloads are not watched (see there).
//
// A child whose payload does not decode (see Decode) is logged, never
// fatal: one corrupt znode must not take a nimbus down. It keeps the last
// payload it had that decoded, so garbage written over a live node changes
// nothing a reader does; one that never decoded has a nil payload, so
// readers still see that the child exists. Unreadable lists both kinds.
type DirCache[M proto.Message] struct {
	sess     *Session
	dir      string
	newMsg   func() M
	log      *slog.Logger
	recreate bool
	members  bool // payloads read once per appearance, not watched

	snap    atomic.Pointer[dirState[M]]
	loaded  chan struct{}
	refresh chan struct{}
	changes notify.Notifier
	history changeLog // what each recent publish changed (Changes)
}

// NewDirCache returns a cache of dir whose payloads newMsg allocates.
// It starts nothing: call Run.
func NewDirCache[M proto.Message](sess *Session, dir string, newMsg func() M, log *slog.Logger) *DirCache[M] {
	c := &DirCache[M]{
		sess:    sess,
		dir:     dir,
		newMsg:  newMsg,
		log:     log.With("component", "cache", "dir", dir),
		loaded:  make(chan struct{}),
		refresh: make(chan struct{}, 1),
	}
	c.snap.Store(&dirState[M]{children: map[string]M{}, unreadable: map[string]bool{}, versions: map[string]int32{}})
	return c
}

// dirState is one published state of a DirCache.
type dirState[M proto.Message] struct {
	children   map[string]M
	unreadable map[string]bool
	versions   map[string]int32 // each child's data version as read
	gen        uint64
	// The directory's Czxid and Cversion at the listing this state comes
	// from; 0 and 0 while the directory is missing or not yet listed.
	czxid    int64
	cversion int32
}

// Recreate makes the cache re-create its directory whenever it finds it
// deleted, logging that: for the fixed directories under the root that a
// daemon owns (/storms, /supervisors, ...), never for a topology's, whose
// deletion is meant. Call it before Run; it returns c.
func (c *DirCache[M]) Recreate() *DirCache[M] {
	c.recreate = true
	return c
}

// MembersOnly makes the cache watch only which children exist: a child's
// payload is read when it appears (or is replaced between two listings)
// and on Refresh, never watched. For nodes their owners rewrite often, as
// supervisors' heartbeats, where a watch would cost every reader a read per
// write. Call it before Run; it returns c.
func (c *DirCache[M]) MembersOnly() *DirCache[M] {
	c.members = true
	return c
}

// Refresh asks the cache to read every child's payload again; the next
// Changed reports the result. It does not wait.
func (c *DirCache[M]) Refresh() {
	select {
	case c.refresh <- struct{}{}:
	default: // one is pending already
	}
}

// Gen counts the states the cache has published: it changes exactly when
// Snapshot does, so a reader can keep what it derives from a snapshot.
func (c *DirCache[M]) Gen() uint64 { return c.snap.Load().gen }

// Snapshot returns the current children by name; a payload is nil when it
// never decoded, and the last one that did when the node's current one
// does not. The map and its messages are shared and must not be modified.
func (c *DirCache[M]) Snapshot() map[string]M { return c.snap.Load().children }

// Unreadable returns the children whose current payload does not decode,
// as of the last Snapshot. The map is shared and must not be modified.
func (c *DirCache[M]) Unreadable() map[string]bool { return c.snap.Load().unreadable }

// Loaded is closed once the directory has been read completely.
func (c *DirCache[M]) Loaded() <-chan struct{} { return c.loaded }

// Changed returns a channel that is closed at the next change.
func (c *DirCache[M]) Changed() <-chan struct{} { return c.changes.Changed() }

// Changes returns the children whose entry changed (appeared, was read
// again, or went) in the states published after generation since, and the
// generation it reports up to; a child read again may hold what it held.
// It reports false when the cache no longer knows (since is too old, or
// the directory was lost and listed anew in between): the caller must look
// at every child. A reader keeps the generation for its next call and
// reads the Snapshot after, which may be newer: the children of those
// newer states come again in the next call.
func (c *DirCache[M]) Changes(since uint64) (map[string]bool, uint64, bool) {
	gen := c.Gen()
	names, ok := c.history.since(since, gen)
	return names, gen, ok
}

// Version returns the data version of child name's node as the cache last
// read it, as of the last Snapshot; false if the cache holds no read of it.
func (c *DirCache[M]) Version(name string) (int32, bool) {
	v, ok := c.snap.Load().versions[name]
	return v, ok
}

// AwaitVersion blocks until the cache has read child name at version v or
// later, or no longer lists it, and reports true; it reports false when
// ctx's deadline, less the margin Call keeps, or stop comes first. It lets
// a writer of a node the cache already held answer only once the cache
// shows its write (read-your-writes): ZooKeeper orders a node's changes, so
// a cache that lost the node saw it deleted after the write.
func (c *DirCache[M]) AwaitVersion(ctx context.Context, stop <-chan struct{}, name string, v int32) bool {
	return c.await(ctx, stop, func(st *dirState[M]) bool {
		got, ok := st.versions[name]
		_, listed := st.children[name]
		return (ok && got >= v) || !listed
	})
}

// AwaitVersions blocks until the cache is at least as new as l, a listing
// of its directory the caller made itself (Reader.SyncedStorms), and
// reports true; it reports false when ctx's deadline, less the margin Call
// keeps, or stop comes first.
//
// The cache is as new once its own last listing is: of the same directory
// (the listing's czxid) with at least its cversion, which counts every
// child created or deleted, or of a directory created since. Each child
// the listing read that the cache still lists must then be read at its
// version there or later; one it no longer lists was deleted after the
// caller's listing, and is not waited for. A reader that synced and listed afresh waits with it to
// answer linearizably.
func (c *DirCache[M]) AwaitVersions(ctx context.Context, stop <-chan struct{}, l Listing) bool {
	dir, want := l.stat, l.Versions
	return c.await(ctx, stop, func(st *dirState[M]) bool {
		switch {
		case st.czxid > dir.Czxid:
			return true // re-created since: every child of want went with it
		case st.czxid < dir.Czxid || st.cversion < dir.Cversion:
			return false // the cache's listing is older
		}
		for name, v := range want {
			if _, listed := st.children[name]; !listed {
				continue // deleted since the caller's listing
			}
			if got, ok := st.versions[name]; !ok || got < v {
				return false
			}
		}
		return true
	})
}

// AwaitChild blocks until the cache lists child name, and reports true; it
// reports false when ctx's deadline, less the margin Call keeps, or stop
// comes first. A creator waits with it until the cache shows its node.
func (c *DirCache[M]) AwaitChild(ctx context.Context, stop <-chan struct{}, name string) bool {
	return c.await(ctx, stop, func(st *dirState[M]) bool {
		_, ok := st.children[name]
		return ok
	})
}

// await waits until done holds for a published state, within ctx's budget
// (Budget) and until stop.
func (c *DirCache[M]) await(ctx context.Context, stop <-chan struct{}, done func(*dirState[M]) bool) bool {
	var expired <-chan time.Time
	if budget, ok := Budget(ctx); ok {
		timer := time.NewTimer(budget)
		defer timer.Stop()
		expired = timer.C
	}
	for {
		changed := c.Changed() // before the state: no publish goes unseen
		if done(c.snap.Load()) {
			return true
		}
		select {
		case <-changed:
		case <-expired:
			return false
		case <-ctx.Done():
			return false
		case <-stop:
			return false
		}
	}
}
