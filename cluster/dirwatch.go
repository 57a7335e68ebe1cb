package cluster

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"golang.org/x/sync/errgroup"
	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/internal/notify"
)

// Run keeps the cache current until ctx ends. It returns ctx's error.
//
// Each pass lists the directory if its watch fired (or was never set),
// reads the children whose watch fired (or that are new), publishes what
// changed, and waits for the next watch, a session change, a Refresh or a
// retry.
func (c *DirCache[M]) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	w := &dirWatch[M]{
		c: c, ctx: ctx, conn: c.sess.Conn(), fired: make(chan watchFired, 64),
		childWatched: map[string]uint64{}, current: map[string]M{}, unreadable: map[string]bool{},
		versions: map[string]int32{}, changed: map[string]bool{}, reset: true, // a new Run: what was seen before is unknown
	}
	defer w.forwarders.Wait()
	defer cancel()
	for {
		dirty, err := w.refresh()
		missing := errors.Is(err, errDirMissing)
		if dirty && (err == nil || missing) {
			w.publish()
		}
		var retry <-chan time.Time
		switch {
		case missing && c.recreate:
			rerr := c.sess.restore(c.dir, c.log)
			if rerr == nil {
				continue // list it at once
			}
			c.log.Warn("cannot re-create directory; retrying", "err", rerr)
			retry = time.After(retryDelay)
		case missing:
			retry = time.After(missingDirRetry)
		case err != nil:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			c.log.Debug("cache refresh failed; retrying", "err", err)
			retry = time.After(retryDelay)
		}
		if !w.wait(retry) {
			return ctx.Err()
		}
	}
}

// watchFired says which watch fired: the directory's (child == "") or a
// child's, and which generation of that child's watch, so an event that
// arrives after its child was dropped and re-listed is recognised as stale.
type watchFired struct {
	child string
	gen   uint64
}

// dirWatch is what one Run of a DirCache keeps between its passes: the
// watches it holds and the state it publishes.
type dirWatch[M proto.Message] struct {
	c          *DirCache[M]
	ctx        context.Context
	conn       *zk.Conn
	fired      chan watchFired
	forwarders sync.WaitGroup // one per armed watch, until it fires or ctx ends

	dirWatched   bool
	dirCzxid     int64             // the directory's creation, to spot a re-creation
	dirCversion  int32             // its child changes as of the last listing
	lastListing  map[string]bool   // that listing
	listed       []string          // its children still there
	childWatched map[string]uint64 // armed watches, by generation
	gen          uint64            // the last generation given
	current      map[string]M      // payloads, as published
	unreadable   map[string]bool   // children whose payload does not decode
	versions     map[string]int32  // each child's data version as last read
	bad          int               // unreadable children logged this pass
	// What changed since the last publish, for Changes: the children
	// read, gone or dropped, or everything (reset).
	changed map[string]bool
	reset   bool
}

// refresh brings the state up to date with ZooKeeper: it lists the
// directory if needed and reads the children that need it. It reports
// whether the state changed, and errDirMissing when the directory is gone
// (the state is then empty).
func (w *dirWatch[M]) refresh() (dirty bool, err error) {
	w.bad = 0
	defer func() {
		if w.bad > maxUnreadableLogged {
			w.c.log.Warn("more unreadable nodes skipped", "count", w.bad-maxUnreadableLogged)
		}
	}()
	if !w.dirWatched {
		if dirty, err = w.list(); err != nil {
			return dirty, err
		}
	}
	readDirty, err := w.readChildren()
	return dirty || readDirty, err
}

// list lists the directory with a watch and drops the children that are
// gone.
func (w *dirWatch[M]) list() (dirty bool, err error) {
	c := w.c
	children, stat, ch, err := w.conn.ChildrenW(c.dir)
	if errors.Is(err, zk.ErrNoNode) {
		// Unless told to, never create it (that could resurrect a deleted
		// topology's directory) nor watch it (a watch on a path that never
		// returns lives as long as the session): read as empty, look again
		// shortly.
		if w.dirCzxid != 0 {
			c.sess.NoticeRoot(c.log) // it was there: deleted
		}
		dirty = len(w.current) > 0 || !notify.Closed(c.loaded)
		w.listed, w.dirCzxid, w.dirCversion = nil, 0, 0
		w.reset = true
		clear(w.current)
		clear(w.unreadable)
		clear(w.versions)
		clear(w.childWatched)
		return dirty, errDirMissing
	}
	if err != nil {
		return false, err
	}
	if w.dirCzxid != 0 && stat.Czxid != w.dirCzxid {
		c.sess.NoticeRoot(c.log) // deleted and re-created meanwhile
	}
	alive := make(map[string]bool, len(children))
	for _, name := range children {
		alive[name] = true
	}
	if c.members && replacedSince(w.lastListing, alive, w.dirCzxid, w.dirCversion, stat) {
		clear(w.childWatched) // which one is unknown: read them all again
	}
	w.dirCzxid, w.dirCversion, w.lastListing = stat.Czxid, stat.Cversion, alive
	w.dirWatched, w.listed = true, children
	w.forward(ch, watchFired{})
	for name := range w.childWatched {
		if !alive[name] {
			delete(w.childWatched, name)
		}
	}
	for name := range w.current {
		if !alive[name] {
			delete(w.current, name)
			delete(w.unreadable, name)
			delete(w.versions, name)
			w.changed[name] = true
		}
	}
	return true, nil
}

// readChildren reads every listed child without an armed watch (every one,
// for a MembersOnly cache after a Refresh) and takes what it finds. A read
// that fails is retried at the next pass; the others are kept.
func (w *dirWatch[M]) readChildren() (dirty bool, err error) {
	var unread []string
	for _, name := range w.listed {
		if _, armed := w.childWatched[name]; !armed {
			unread = append(unread, name)
		}
	}
	var gone map[string]bool
	for i, r := range w.c.readChildren(w.conn, unread) {
		name := unread[i]
		switch {
		case errors.Is(r.err, zk.ErrNoNode):
			// Gone since the listing; the directory watch fires too, and
			// its relist reads the name again if it comes back.
			delete(w.current, name)
			delete(w.unreadable, name)
			delete(w.versions, name)
			w.changed[name] = true
			if gone == nil {
				gone = map[string]bool{}
			}
			gone[name], dirty = true, true
		case r.err != nil && !errors.Is(r.err, zk.ErrNoAuth):
			// A node whose ACL denies us stays so: it is taken as
			// unreadable, as garbage is, or one such node would stop
			// every publish.
			err = r.err
		default:
			w.take(name, r)
			dirty = true
		}
	}
	if gone != nil {
		w.listed = slices.DeleteFunc(w.listed, func(name string) bool { return gone[name] })
	}
	return dirty, err
}

// take records what a read of child name found and arms its watch.
func (w *dirWatch[M]) take(name string, r childRead) {
	c := w.c
	w.changed[name] = true
	w.gen++
	w.childWatched[name] = w.gen
	if r.watch != nil {
		w.forward(r.watch, watchFired{name, w.gen})
	}
	if r.err == nil {
		// Even a payload that does not decode is this version, read:
		// AwaitVersion waits for reads, not for good payloads.
		w.versions[name] = r.version
	}
	p := c.dir + "/" + name
	m := c.newMsg()
	if err := cmp.Or(r.err, Decode(p, r.data, m)); err != nil {
		prev, had := w.current[name]
		kept := had && prev.ProtoReflect().IsValid()
		if w.bad++; w.bad <= maxUnreadableLogged {
			if kept {
				c.log.Warn("unreadable node; keeping its last readable payload", "path", p, "err", err)
			} else {
				c.log.Warn("unreadable node skipped", "path", p, "err", err)
			}
		}
		if !had {
			var none M
			w.current[name] = none
		}
		w.unreadable[name] = true
		return
	}
	w.current[name] = m
	delete(w.unreadable, name)
}

// forward delivers ch's event, when it comes, as f on w.fired.
func (w *dirWatch[M]) forward(ch <-chan zk.Event, f watchFired) {
	w.forwarders.Go(func() {
		select {
		case <-ch:
			select {
			case w.fired <- f:
			case <-w.ctx.Done():
			}
		case <-w.ctx.Done():
		}
	})
}

// wait blocks until something calls for another pass: a watch, a session
// change, a Refresh or retry. It coalesces a burst of watch events into
// one pass, and reports false once ctx ends.
func (w *dirWatch[M]) wait(retry <-chan time.Time) bool {
	_, _, sessionChanged := w.c.sess.State()
	select {
	case <-w.ctx.Done():
		return false
	case <-retry:
	case <-sessionChanged:
	case <-w.c.refresh:
		w.rereadForRefresh()
	case f := <-w.fired:
		w.markFired(f)
		for {
			select {
			case <-w.c.refresh:
				w.rereadForRefresh()
			case f := <-w.fired:
				w.markFired(f)
			default:
				return true
			}
		}
	}
	return true
}

// rereadForRefresh makes a MembersOnly cache read every payload again.
func (w *dirWatch[M]) rereadForRefresh() {
	if w.c.members {
		clear(w.childWatched)
	}
}

// markFired notes that a watch fired: the directory is listed again, or
// the child read again, at the next pass. A child's watch that fired after
// the child was dropped and listed anew is stale, and ignored.
func (w *dirWatch[M]) markFired(f watchFired) {
	if f.child == "" {
		w.dirWatched = false
		// A relist re-arms the children it finds gone or new; children
		// watched before keep their watches.
		return
	}
	if w.childWatched[f.child] == f.gen {
		delete(w.childWatched, f.child)
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
	data    []byte
	version int32           // the node's data version
	watch   <-chan zk.Event // nil for a MembersOnly cache
	err     error
}

// readChildren reads the named children, up to maxReadsInFlight at once,
// with a watch on each unless the cache is MembersOnly.
func (c *DirCache[M]) readChildren(conn *zk.Conn, names []string) []childRead {
	out := make([]childRead, len(names))
	var g errgroup.Group
	g.SetLimit(maxReadsInFlight)
	for i, name := range names {
		g.Go(func() error {
			r, p := &out[i], c.dir+"/"+name
			var stat *zk.Stat
			if c.members {
				r.data, stat, r.err = conn.Get(p)
			} else {
				r.data, stat, r.watch, r.err = conn.GetW(p)
			}
			if r.err == nil {
				r.version = stat.Version
			}
			return nil
		})
	}
	_ = g.Wait() // every error is in out
	return out
}

// publish makes the state, with the listing it comes from, the cache's
// snapshot and wakes its readers.
func (w *dirWatch[M]) publish() {
	c := w.c
	gen := c.snap.Load().gen + 1
	c.history.record(gen, w.changed, w.reset, len(w.current))
	clear(w.changed)
	w.reset = false
	c.snap.Store(&dirState[M]{
		children: maps.Clone(w.current), unreadable: maps.Clone(w.unreadable), versions: maps.Clone(w.versions),
		gen: gen, czxid: w.dirCzxid, cversion: w.dirCversion,
	})
	c.changes.Notify()
	if !notify.Closed(c.loaded) {
		close(c.loaded)
	}
}
