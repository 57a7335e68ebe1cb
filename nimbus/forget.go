package nimbus

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/apierr"
	"github.com/nimbusha/nimbus/auth"
	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/codedistributor"
	"github.com/nimbusha/nimbus/codesync"
	"github.com/nimbusha/nimbus/configs"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/validate"
)

// ForgetTopology removes a topology marked LOST (codesync/lost.go) in these
// steps: find it, check afresh that it is LOST and that no nimbus holds its
// code, then delete its StormBase, distribution, assignment and mark in
// one write, guarded by the versions read. Any nimbus answers: the wedge
// it undoes is the one without a leader. A leader's write is fenced by its
// term as well; without one it is the fence-free admin path
// (docs/ARCHITECTURE.md invariant 3): a concurrent leader's change to the
// StormBase changes its version and fails the write.
func (s *service) ForgetTopology(ctx context.Context, req *nimbusv1.ForgetTopologyRequest) (*nimbusv1.ForgetTopologyResponse, error) {
	if err := validate.Forget(req); err != nil {
		return nil, apierr.ToStatus(err)
	}
	id, ops, err := s.forgetOps(ctx, req.GetName())
	if err != nil {
		return nil, apierr.ToStatus(err)
	}
	fenced, err := s.forgetWrite(ctx, ops)
	if err != nil {
		return nil, apierr.ToStatus(fmt.Errorf("nimbus: forget %s: %w", id, err))
	}
	if err := s.dist.Cleanup(ctx, id); err != nil {
		s.log.Warn("code cleanup after forget failed", "topology", id, "err", err)
	}
	s.log.Warn("topology forgotten", "topology", id, "principal", principal(ctx), "reason", req.GetReason(), "fenced", fenced)
	return &nimbusv1.ForgetTopologyResponse{TopologyId: id, Fenced: fenced}, nil
}

// forgetOps reads what forgetting name removes, each read bounded by ctx,
// and refuses unless it is LOST: the mark is there, for the code the
// StormBase names, and no nimbus registers a replica of that code.
func (s *service) forgetOps(ctx context.Context, name string) (string, []cluster.Op, error) {
	paths, ops := s.sess.Paths(), s.sess.Ops()
	id, base, baseVersion, err := s.findStorm(ctx, name)
	if err != nil {
		return "", nil, err
	}
	mark := new(clusterv1.LostMark)
	markVersion, err := readNode(ctx, s.sess, paths.Lost(id), mark)
	if errors.Is(err, zk.ErrNoNode) || (err == nil && !bytes.Equal(mark.GetCodeMetaDigest(), base.GetCodeMetaDigest())) {
		return "", nil, fmt.Errorf("%w: %s is not LOST: only a topology whose code no nimbus and no supervisor holds may be forgotten (kill it instead)",
			apierr.ErrWrongStatus, id)
	}
	if err != nil {
		return "", nil, err
	}
	replicas, err := cluster.Call(ctx, s.sess, "list replicas of "+id, func(conn *zk.Conn) ([]string, error) {
		names, _, err := conn.Children(paths.Distribution(id))
		if errors.Is(err, zk.ErrNoNode) {
			return nil, nil
		}
		return names, err
	})
	if err != nil {
		return "", nil, err
	}
	holders, err := cluster.Call(ctx, s.sess, "read replicas of "+id, func(*zk.Conn) ([]string, error) {
		addrs, err := codedistributor.Sources(s.sess, id, base.GetCodeMetaDigest(), "")
		if errors.Is(err, codedistributor.ErrNoDistribution) {
			return nil, nil
		}
		return addrs, err
	})
	if err != nil {
		return "", nil, err
	}
	if len(holders) > 0 {
		return "", nil, fmt.Errorf("%w: nimbus %s holds the code of %s again; it is no longer LOST", apierr.ErrWrongStatus, holders[0], id)
	}
	out := []cluster.Op{ops.DeleteLost(id, markVersion), ops.DeleteStormAt(id, baseVersion)}
	if replicas != nil {
		out = append(out, ops.DeleteDistribution(id, replicas)...)
	}
	if _, ok := s.view.assignments.Snapshot()[id]; ok {
		out = append(out, ops.DeleteAssignment(id))
	}
	return id, out, nil
}

// findStorm finds name, an id or a name, and reads its StormBase afresh.
func (s *service) findStorm(ctx context.Context, name string) (string, *clusterv1.StormBase, int32, error) {
	id := name
	if _, ok := s.view.storms.Snapshot()[name]; !ok {
		var err error
		if id, _, err = s.view.byName(name); err != nil {
			return "", nil, 0, err
		}
	}
	base := new(clusterv1.StormBase)
	version, err := readNode(ctx, s.sess, s.sess.Paths().Storm(id), base)
	if errors.Is(err, zk.ErrNoNode) {
		return "", nil, 0, fmt.Errorf("%w: %q", apierr.ErrNotFound, name)
	}
	return id, base, version, err
}

// forgetWrite applies ops: fenced by this nimbus's term if it leads, else
// guarded only by the versions the ops check. It says which.
func (s *service) forgetWrite(ctx context.Context, ops []cluster.Op) (fenced bool, err error) {
	if term := s.election.Current(); term != nil {
		_, err := term.MultiCtx(ctx, ops...)
		return true, err
	}
	_, err = cluster.CallWrite(ctx, s.sess, "forget", func(conn *zk.Conn) ([]zk.MultiResponse, error) {
		return cluster.Multi(conn, ops...)
	})
	return false, err
}

// readNode reads one node into m, bounded by ctx, and returns its version.
func readNode(ctx context.Context, sess *cluster.Session, path string, m proto.Message) (int32, error) {
	stat, err := cluster.Call(ctx, sess, "read "+path, func(conn *zk.Conn) (*zk.Stat, error) {
		data, stat, err := conn.Get(path)
		if err != nil {
			return nil, err
		}
		return stat, cluster.Decode(path, data, m)
	})
	if err != nil {
		return 0, err
	}
	return stat.Version, nil
}

// principal names the caller for a log line.
func principal(ctx context.Context) string {
	if p, ok := auth.FromContext(ctx); ok {
		return p
	}
	return auth.Anonymous
}

// registerLostMetrics exports how many topologies are LOST.
func registerLostMetrics(reg prometheus.Registerer, v *view) {
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "nimbus_topologies_lost",
		Help: "Topologies marked LOST: no nimbus and no supervisor holds their code (stormctl admin forget removes them).",
	}, func() float64 { return float64(len(codesync.LostMarks(v.storms.Snapshot(), v.lost.Snapshot()))) }))
}

// lostGrace is nimbus.code.lost.grace.secs for codesync: 0 never marks.
func lostGrace(cfg *configs.Config) time.Duration {
	grace, never := cfg.CodeLostGrace()
	if never {
		return 0
	}
	return grace
}
