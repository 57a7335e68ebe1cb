package nimbus

import (
	"context"
	"fmt"

	"github.com/nimbusha/nimbus/cluster"
)

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
	listed, err := s.sess.ReadFor(ctx).SyncedStorms()
	if err != nil {
		return err
	}
	if !s.view.Storms.AwaitVersions(ctx, nil, listed) {
		return fmt.Errorf("%w: this nimbus's view of the topologies did not catch up with ZooKeeper within the request's deadline", cluster.ErrUnavailable)
	}
	return nil
}
