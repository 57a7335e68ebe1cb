package cluster

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
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
	c.snap.Store(&dirState[M]{children: map[string]M{}, unreadable: map[string]bool{}})
	return c
}

// dirState is one published state of a DirCache.
type dirState[M proto.Message] struct {
	children   map[string]M
	unreadable map[string]bool
	gen        uint64
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

// watchFired says which watch fired: the directory's (child == "") or a
// child's, and which generation of that child's watch, so an event that
// arrives after its child was dropped and re-listed is recognised as stale.
type watchFired struct {
	child string
	gen   uint64
}

// Run keeps the cache current until ctx ends. It returns ctx's error.
func (c *DirCache[M]) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	var forwarders sync.WaitGroup
	defer forwarders.Wait()
	defer cancel()

	fired := make(chan watchFired, 64)
	forward := func(ch <-chan zk.Event, f watchFired) {
		forwarders.Go(func() {
			select {
			case <-ch:
				select {
				case fired <- f:
				case <-ctx.Done():
				}
			case <-ctx.Done():
			}
		})
	}

	conn := c.sess.Conn()
	var (
		dirWatched   bool
		dirCzxid     int64                 // the directory's creation, to spot a re-creation
		dirCversion  int32                 // its child changes as of the last listing
		lastListing  map[string]bool       // that listing
		childWatched = map[string]uint64{} // armed watches, by generation
		gen          uint64
		current      = map[string]M{}
		unreadable   = map[string]bool{}
		listed       []string
	)
	for {
		dirty := false
		bad := 0 // unreadable children logged this round
		err := func() error {
			if !dirWatched {
				children, stat, ch, err := conn.ChildrenW(c.dir)
				if errors.Is(err, zk.ErrNoNode) {
					// Unless told to, never create it (that could resurrect
					// a deleted topology's directory) nor watch it (a watch
					// on a path that never returns lives as long as the
					// session): read as empty, look again shortly.
					if dirCzxid != 0 {
						c.sess.NoticeRoot(c.log) // it was there: deleted
					}
					dirty = len(current) > 0 || !notify.Closed(c.loaded)
					listed, dirCzxid = nil, 0
					clear(current)
					clear(unreadable)
					clear(childWatched)
					return errDirMissing
				}
				if err != nil {
					return err
				}
				if dirCzxid != 0 && stat.Czxid != dirCzxid {
					c.sess.NoticeRoot(c.log) // deleted and re-created meanwhile
				}
				alive := make(map[string]bool, len(children))
				for _, name := range children {
					alive[name] = true
				}
				if c.members && replacedSince(lastListing, alive, dirCzxid, dirCversion, stat) {
					clear(childWatched) // which one is unknown: read them all again
				}
				dirCzxid, dirCversion, lastListing = stat.Czxid, stat.Cversion, alive
				dirWatched, listed, dirty = true, children, true
				forward(ch, watchFired{})
				for name := range childWatched {
					if !alive[name] {
						delete(childWatched, name)
					}
				}
				for name := range current {
					if !alive[name] {
						delete(current, name)
						delete(unreadable, name)
					}
				}
			}
			var err error
			var unread []string
			for _, name := range listed {
				if _, armed := childWatched[name]; !armed {
					unread = append(unread, name)
				}
			}
			reads := c.readChildren(conn, unread)
			var gone map[string]bool
			for i, r := range reads {
				name := unread[i]
				p := c.dir + "/" + name
				if errors.Is(r.err, zk.ErrNoNode) {
					// Gone since the listing; the directory watch fires too,
					// and its relist reads the name again if it comes back.
					delete(current, name)
					delete(unreadable, name)
					if gone == nil {
						gone = map[string]bool{}
					}
					gone[name], dirty = true, true
					continue
				}
				// A node whose ACL denies us stays so: unreadable, as
				// garbage is, or one such node would stop every publish.
				if r.err != nil && !errors.Is(r.err, zk.ErrNoAuth) {
					err = r.err // the rest are read; this one is retried
					continue
				}
				gen++
				childWatched[name] = gen
				if r.watch != nil {
					forward(r.watch, watchFired{name, gen})
				}
				m := c.newMsg()
				if err := cmp.Or(r.err, Decode(p, r.data, m)); err != nil {
					prev, had := current[name]
					kept := had && prev.ProtoReflect().IsValid()
					if bad++; bad <= maxUnreadableLogged {
						if kept {
							c.log.Warn("unreadable node; keeping its last readable payload", "path", p, "err", err)
						} else {
							c.log.Warn("unreadable node skipped", "path", p, "err", err)
						}
					}
					if !had {
						var none M
						current[name] = none
					}
					unreadable[name], dirty = true, true
					continue
				}
				current[name] = m
				delete(unreadable, name)
				dirty = true
			}
			if gone != nil {
				listed = slices.DeleteFunc(listed, func(name string) bool { return gone[name] })
			}
			return err
		}()
		if bad > maxUnreadableLogged {
			c.log.Warn("more unreadable nodes skipped", "count", bad-maxUnreadableLogged)
		}
		missing := errors.Is(err, errDirMissing)
		if dirty && (err == nil || missing) {
			c.publish(current, unreadable)
		}

		var retry <-chan time.Time
		if missing && c.recreate {
			if err := c.sess.Restore(c.dir, c.log); err != nil {
				c.log.Warn("cannot re-create directory; retrying", "err", err)
				retry = time.After(retryDelay)
			} else {
				continue // list it at once
			}
		} else if missing {
			retry = time.After(missingDirRetry)
		} else if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			c.log.Debug("cache refresh failed; retrying", "err", err)
			retry = time.After(retryDelay)
		}
		_, _, sessionChanged := c.sess.State()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-retry:
		case <-sessionChanged:
		case <-c.refresh:
			if c.members {
				clear(childWatched) // read every payload again
			}
		case f := <-fired:
			c.markFired(f, &dirWatched, childWatched)
			// Coalesce a burst of events into one refresh.
			for drained := false; !drained; {
				select {
				case <-c.refresh:
					if c.members {
						clear(childWatched) // read every payload again
					}
				case f := <-fired:
					c.markFired(f, &dirWatched, childWatched)
				default:
					drained = true
				}
			}
		}
	}
}

// replacedSince reports whether, between the last listing and this one,
// a child was deleted and created again (a supervisor restarted under its
// id): the directory counts every child created or deleted, and more
// changes than the two listings differ by mean some are hidden. A
// MembersOnly cache, which sees no child's own events, must read again.
func replacedSince(last, now map[string]bool, czxid int64, cversion int32, stat *zk.Stat) bool {
	if czxid == 0 {
		return false // first listing: everything is read anyway
	}
	if stat.Czxid != czxid {
		return true // the directory itself was replaced
	}
	differ := len(last)
	for name := range now {
		if last[name] {
			differ-- // in both
		} else {
			differ++ // new
		}
	}
	return int(stat.Cversion-cversion) > differ
}

// childRead is the outcome of reading one child.
type childRead struct {
	data  []byte
	watch <-chan zk.Event // nil for a MembersOnly cache
	err   error
}

// readChildren reads the named children, up to maxReadsInFlight at once,
// with a watch on each unless the cache is MembersOnly.
func (c *DirCache[M]) readChildren(conn *zk.Conn, names []string) []childRead {
	out := make([]childRead, len(names))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(len(names), maxReadsInFlight) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(names); i = int(next.Add(1) - 1) {
				r, p := &out[i], c.dir+"/"+names[i]
				if c.members {
					r.data, _, r.err = conn.Get(p)
				} else {
					r.data, _, r.watch, r.err = conn.GetW(p)
				}
			}
		})
	}
	wg.Wait()
	return out
}

func (c *DirCache[M]) markFired(f watchFired, dirWatched *bool, childWatched map[string]uint64) {
	if f.child == "" {
		*dirWatched = false
		// A relist re-arms the children it finds gone or new; children
		// watched before keep their watches.
		return
	}
	if childWatched[f.child] == f.gen {
		delete(childWatched, f.child)
	}
}

func (c *DirCache[M]) publish(current map[string]M, unreadable map[string]bool) {
	c.snap.Store(&dirState[M]{children: maps.Clone(current), unreadable: maps.Clone(unreadable), gen: c.snap.Load().gen + 1})
	c.changes.Notify()
	if !notify.Closed(c.loaded) {
		close(c.loaded)
	}
}
