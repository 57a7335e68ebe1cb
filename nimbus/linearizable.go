package nimbus

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
	"golang.org/x/sync/errgroup"

	"github.com/nimbusha/nimbus/cluster"
)

// readConcurrency bounds the version reads of one linearizable read.
const readConcurrency = 16

// catchUp makes a linearizable read's view at least as new as ZooKeeper
// was when the request arrived (docs/ARCHITECTURE.md section 11): a sync,
// so this nimbus's ZooKeeper server has every write committed before it;
// a fresh listing of /storms, kept with its Stat, and each topology's
// version; then a wait, within the request's deadline, until the /storms
// cache has listed the directory at least as new and holds those versions.
// A topology deleted meanwhile is not waited for: the cache's newer
// listing shows it gone (only the leader removes topologies, after a kill,
// so a read may show one as KILLED).
func (s *service) catchUp(ctx context.Context) error {
	dir := s.sess.Paths().Storms()
	listed, err := cluster.Call(ctx, s.sess, "sync and list "+dir, func(conn *zk.Conn) (listing, error) {
		if _, err := conn.Sync(dir); err != nil {
			return listing{}, err
		}
		ids, stat, err := conn.Children(dir)
		if err != nil {
			return listing{}, err
		}
		versions, err := versionsOf(conn, dir, ids)
		return listing{stat, versions}, err
	})
	if err != nil {
		return err
	}
	if !s.view.storms.AwaitVersions(ctx, nil, listed.stat, listed.versions) {
		return fmt.Errorf("%w: this nimbus's view of the topologies did not catch up with ZooKeeper within the request's deadline", cluster.ErrUnavailable)
	}
	return nil
}

// listing is what catchUp read of /storms: the directory's Stat as listed,
// and the version of each child still there after it.
type listing struct {
	stat     *zk.Stat
	versions map[string]int32
}

// versionsOf reads the data version of each child of dir, readConcurrency
// at a time; a child deleted since the listing is left out.
func versionsOf(conn *zk.Conn, dir string, ids []string) (map[string]int32, error) {
	versions := make([]int32, len(ids))
	exists := make([]bool, len(ids))
	var g errgroup.Group
	g.SetLimit(readConcurrency)
	for i, id := range ids {
		g.Go(func() error {
			ok, stat, err := conn.Exists(dir + "/" + id)
			if err != nil && !errors.Is(err, zk.ErrNoNode) {
				return err
			}
			if ok {
				versions[i], exists[i] = stat.Version, true
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	want := make(map[string]int32, len(ids))
	for i, id := range ids {
		if exists[i] {
			want[id] = versions[i]
		}
	}
	return want, nil
}
