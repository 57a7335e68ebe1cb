package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/go-zookeeper/zk"

	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// The writes made outside the leader's fence (leader.Term.Multi): a multi
// any nimbus may apply, guarded by the versions its ops check (a LOST mark,
// ForgetTopology without a leader), a supervisor's heartbeat, the deletion
// of a dead leader's lock node, and the BitTorrent swarms' directories.

// Multi applies ops atomically, unfenced, and waits for ZooKeeper as long
// as go-zookeeper does. The error names the first operation that failed.
func (s *Session) Multi(ops ...Op) ([]MultiResponse, error) { return multi(s.Conn(), ops...) }

// MultiFor is Multi on behalf of a request, bounded by ctx (CallWrite):
// ErrUnavailable if nothing was sent in time, ErrOutcomeUnknown if the
// answer did not come in time.
func (s *Session) MultiFor(ctx context.Context, what string, ops ...Op) ([]MultiResponse, error) {
	return CallWrite(ctx, s, what, func(conn *zk.Conn) ([]MultiResponse, error) { return multi(conn, ops...) })
}

func multi(conn *zk.Conn, ops ...Op) ([]MultiResponse, error) {
	reqs := make([]any, len(ops))
	for i, op := range ops {
		reqs[i] = op.Request()
	}
	res, err := conn.Multi(reqs...)
	if err != nil {
		for i, r := range res {
			if r.Error != nil {
				return res, fmt.Errorf("cluster: multi op %d: %w", i, r.Error)
			}
		}
	}
	return res, err
}

// SetSupervisor is a supervisor's heartbeat: it rewrites the registration
// of supervisor id with info, whatever its version. ErrNoNode: the
// registration is gone, and is for EphemeralNode.Keep to create again.
func (s *Session) SetSupervisor(id string, info *clusterv1.SupervisorInfo) error {
	_, err := s.Conn().Set(s.paths.Supervisor(id), Encode(info), AnyVersion)
	return err
}

// DeleteLock deletes the lock node name of /leader-lock, by its path and
// the version read just before: a deposition (package depose) removes that
// node and never a later one. ErrNoNode: it is gone already.
func (s *Session) DeleteLock(name string) error {
	path := s.paths.LeaderLock() + "/" + name
	_, stat, err := s.Conn().Get(path)
	if err != nil {
		return err
	}
	return s.Conn().Delete(path, stat.Version)
}

// CreateSwarm makes the directory where the peers of swarm id register,
// in directory swarms (Paths.Swarms for a topology's code, Paths.BlobSwarms
// for a blob's), re-creating swarms if it was deleted by hand (the whole
// root, say), or no upload could succeed again.
func (s *Session) CreateSwarm(swarms, id string, log *slog.Logger) error {
	dir := swarms + "/" + id
	_, err := s.Conn().Create(dir, nil, 0, s.access.acl)
	if errors.Is(err, zk.ErrNoNode) {
		if err := s.restore(swarms, log); err != nil {
			return err
		}
		_, err = s.Conn().Create(dir, nil, 0, s.access.acl)
	}
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return err
	}
	return nil
}

// RemoveSwarm deletes swarm id's directory in directory swarms
// (Paths.Swarms or Paths.BlobSwarms) and its members in one multi: members
// register again as soon as their node goes, so deleting them one by one
// could go on for ever.
func (s *Session) RemoveSwarm(swarms, id string) error {
	conn, dir := s.Conn(), swarms+"/"+id
	for range 5 { // a member may join or leave between the listing and the delete
		members, stat, err := conn.Children(dir)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		ops := make([]any, 0, len(members)+1)
		for _, m := range members {
			ops = append(ops, &zk.DeleteRequest{Path: dir + "/" + m, Version: AnyVersion})
		}
		ops = append(ops, &zk.DeleteRequest{Path: dir, Version: stat.Version})
		_, err = conn.Multi(ops...)
		if err == nil {
			return nil
		}
		// A member that left (ErrNoNode) fails the whole multi, the
		// directory's deletion too: list again.
		if !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrNotEmpty) && !errors.Is(err, zk.ErrBadVersion) {
			return err
		}
	}
	return errors.New("cluster: peers keep joining or leaving the swarm of " + id)
}
