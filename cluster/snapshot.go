package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/nimbusha/nimbus/apierr"
)

// The reads and writes of a cluster snapshot (package snapshot): every
// persistent node under the root, read at one point in time, and written
// back onto a root.

// PersistentNode is a persistent node under the root: its path relative to
// the root ("storms/wc-1-1700000000") and its payload.
type PersistentNode struct {
	Path string
	Data []byte
}

// maxSnapshotTries bounds how often ReadPersistent walks the tree again
// because something changed while it read.
const maxSnapshotTries = 5

// ErrChanging: the tree kept changing while it was read; try again.
var ErrChanging = apierr.Sentinel("cluster: the state kept changing while it was read", apierr.ErrUnavailable)

// ReadPersistent reads every persistent node under the root, parents
// first, at one point in time: it walks the tree, then walks it again
// reading only versions, and answers once no persistent node was created,
// deleted or rewritten between the two (ErrChanging after
// maxSnapshotTries); ephemeral ones may come and go meanwhile. Ephemeral nodes (registrations,
// lock nodes, replicas) are their owners' and are left out. It returns the
// highest zxid it saw: the snapshot is of the state at that transaction.
func (s *Session) ReadPersistent(ctx context.Context) ([]PersistentNode, int64, error) {
	for range maxSnapshotTries {
		first, err := s.walk(ctx, true)
		if err != nil {
			return nil, 0, err
		}
		second, err := s.walk(ctx, false)
		if err != nil {
			return nil, 0, err
		}
		if first.same(second) {
			return first.nodes, first.zxid, nil
		}
	}
	return nil, 0, fmt.Errorf("%w: %d reads of the whole tree each saw a change", ErrChanging, maxSnapshotTries)
}

// tree is one walk: the persistent nodes (with data, on a reading walk),
// and the transaction that last wrote each.
type tree struct {
	nodes    []PersistentNode
	versions map[string]int64 // path: Mzxid
	zxid     int64
}

func (t tree) same(o tree) bool {
	if len(t.versions) != len(o.versions) {
		return false
	}
	for p, v := range t.versions {
		if o.versions[p] != v {
			return false
		}
	}
	return true
}

// walkReads bounds the reads a walk has outstanding at once: go-zookeeper
// pipelines them on its one connection.
const walkReads = 64

// walk reads the tree under the root level by level, each level's reads
// at once (up to walkReads), with data when withData.
func (s *Session) walk(ctx context.Context, withData bool) (tree, error) {
	t := tree{versions: map[string]int64{}}
	conn := s.Conn()
	level := []string{""}
	for len(level) > 0 {
		type result struct {
			node     PersistentNode
			children []string
			mzxid    int64
			pzxid    int64
			keep     bool
			err      error
		}
		results := make([]result, len(level))
		sem := make(chan struct{}, walkReads)
		var wg sync.WaitGroup
		for i, rel := range level {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				full := s.paths.Root
				if rel != "" {
					full += "/" + rel
				}
				r := &results[i]
				var stat *zk.Stat
				var data []byte
				var err error
				if withData {
					data, stat, err = conn.Get(full)
				} else {
					_, stat, err = conn.Exists(full)
					if err == nil && stat == nil {
						err = zk.ErrNoNode
					}
				}
				if errors.Is(err, zk.ErrNoNode) {
					return // deleted since its parent was listed: the next walk differs
				}
				if err != nil {
					r.err = fmt.Errorf("%w: read %s: %v", ErrUnavailable, full, err)
					return
				}
				if stat.EphemeralOwner != 0 {
					return
				}
				r.keep, r.mzxid, r.pzxid = true, stat.Mzxid, stat.Pzxid
				r.node = PersistentNode{Path: rel, Data: data}
				if stat.NumChildren > 0 {
					children, _, err := conn.Children(full)
					if err != nil && !errors.Is(err, zk.ErrNoNode) {
						r.err = fmt.Errorf("%w: list %s: %v", ErrUnavailable, full, err)
						return
					}
					slices.Sort(children)
					r.children = children
				}
			})
		}
		wg.Wait()
		if err := ctx.Err(); err != nil {
			return t, err
		}
		var next []string
		for i, r := range results {
			if r.err != nil {
				return t, r.err
			}
			if !r.keep {
				continue
			}
			t.versions[level[i]] = r.mzxid
			t.zxid = max(t.zxid, r.mzxid, r.pzxid)
			if level[i] != "" { // the root itself is the cluster's, not the snapshot's
				t.nodes = append(t.nodes, r.node)
			}
			for _, c := range r.children {
				next = append(next, path.Join(level[i], c))
			}
		}
		level = next
	}
	return t, nil
}

// Existing sorts nodes by what ZooKeeper holds at their paths now: those
// whose payload it holds otherwise (a restore would overwrite them), and
// those it holds the same. A node not there is in neither.
func (s *Session) Existing(ctx context.Context, nodes []PersistentNode) (differ, same []string, err error) {
	held, err := s.held(ctx, nodes)
	if err != nil {
		return nil, nil, err
	}
	for i, n := range nodes {
		switch {
		case held[i] == nil:
		case bytes.Equal(*held[i], n.Data):
			same = append(same, n.Path)
		default:
			differ = append(differ, n.Path)
		}
	}
	return differ, same, nil
}

// held reads what ZooKeeper holds at each node's path, walkReads at a
// time: nil where there is no node.
func (s *Session) held(ctx context.Context, nodes []PersistentNode) ([]*[]byte, error) {
	out := make([]*[]byte, len(nodes))
	errs := make([]error, len(nodes))
	sem := make(chan struct{}, walkReads)
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			data, err := Call(ctx, s, "read "+n.Path, func(conn *zk.Conn) ([]byte, error) {
				data, _, err := conn.Get(s.paths.Root + "/" + n.Path)
				return data, err
			})
			switch {
			case errors.Is(err, zk.ErrNoNode):
			case err != nil:
				errs[i] = err
			default:
				out[i] = &data
			}
		})
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// lastPath is the path of the last operation of a batch.
func lastPath(batch []any) string {
	switch op := batch[len(batch)-1].(type) {
	case *zk.CreateRequest:
		return op.Path
	case *zk.SetDataRequest:
		return op.Path
	}
	return ""
}

// Bounds of one multi of a restore: well under jute.maxbuffer (1 MiB by
// default) and what ZooKeeper applies at once without delay.
const (
	restoreBatchOps   = 500
	restoreBatchBytes = 512 << 10
)

// WritePersistent writes nodes under the root, parents first, in multis of
// up to restoreBatchOps operations: a node not there is created with the
// session's ACL, one there otherwise is set, one there the same is left.
// The nodes whose path starts with one of last are written after all the
// others: the node that tells the daemons the cluster is back goes when
// everything else is.
func (s *Session) WritePersistent(ctx context.Context, nodes []PersistentNode, last ...string) error {
	ordered := slices.Clone(nodes)
	isLast := func(p string) bool {
		return slices.ContainsFunc(last, func(l string) bool { return strings.HasPrefix(p, l) })
	}
	slices.SortStableFunc(ordered, func(a, b PersistentNode) int {
		if la, lb := isLast(a.Path), isLast(b.Path); la != lb {
			if la {
				return 1
			}
			return -1
		}
		return strings.Count(a.Path, "/") - strings.Count(b.Path, "/")
	})
	if err := s.EnsurePath(s.paths.Root); err != nil {
		return err
	}
	held, err := s.held(ctx, ordered)
	if err != nil {
		return err
	}
	var batch []any
	var size int
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		ops := batch
		batch, size = nil, 0
		_, err := CallWrite(ctx, s, "restore", func(conn *zk.Conn) ([]zk.MultiResponse, error) {
			return conn.Multi(ops...)
		})
		if err != nil {
			return fmt.Errorf("cluster: restore: %w", err)
		}
		return nil
	}
	for i, n := range ordered {
		full := s.paths.Root + "/" + n.Path
		var op any
		switch {
		case held[i] == nil:
			op = &zk.CreateRequest{Path: full, Data: n.Data, Acl: s.access.acl}
		case !bytes.Equal(*held[i], n.Data):
			op = &zk.SetDataRequest{Path: full, Data: n.Data, Version: AnyVersion}
		default:
			continue
		}
		// A batch ends before the limits, and before the nodes written
		// last.
		grows := len(full) + len(n.Data)
		if len(batch) >= restoreBatchOps || size+grows > restoreBatchBytes || (isLast(n.Path) && len(batch) > 0 && !isLast(lastPath(batch))) {
			if err := flush(); err != nil {
				return err
			}
		}
		batch = append(batch, op)
		size += grows
	}
	return flush()
}
