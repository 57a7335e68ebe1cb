package bittorrent

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/anacrolix/torrent"
	"github.com/go-zookeeper/zk"

	"github.com/nimbusha/nimbus/cluster"
)

// redialEvery paces the re-reading of a swarm's members while
// downloading: members that refused or dropped a connection are tried
// again, and a missing swarm directory is looked for again.
const redialEvery = 2 * time.Second

// createSwarm makes the directory where the peers of a topology register,
// and the directory of swarms if it was deleted by hand (the whole root,
// say), or no submission could succeed again.
func createSwarm(sess *cluster.Session, topologyID string, log *slog.Logger) error {
	_, err := sess.Conn().Create(sess.Paths().Swarm(topologyID), nil, 0, sess.ACL())
	if errors.Is(err, zk.ErrNoNode) {
		if err := sess.Restore(sess.Paths().Swarms(), log); err != nil {
			return err
		}
		_, err = sess.Conn().Create(sess.Paths().Swarm(topologyID), nil, 0, sess.ACL())
	}
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return err
	}
	return nil
}

// removeSwarm deletes a topology's swarm directory and its members in
// one transaction: members re-register as soon as their node goes, so
// deleting them one by one could go on for ever.
func removeSwarm(sess *cluster.Session, topologyID string) error {
	conn, dir := sess.Conn(), sess.Paths().Swarm(topologyID)
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
			ops = append(ops, &zk.DeleteRequest{Path: dir + "/" + m, Version: -1})
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
	return errors.New("bittorrent: peers keep joining or leaving the swarm of " + topologyID)
}

// join registers this node in a's swarm until ctx ends; a download also
// takes the other members as its peers.
func (d *distributor) join(ctx context.Context, topologyID string, a *active) {
	var wg sync.WaitGroup
	if a.seeded == "" {
		wg.Go(func() { d.findPeers(ctx, topologyID, a) })
	}
	cluster.KeepEphemeral(ctx, d.p.Session, d.p.Session.Paths().Swarm(topologyID)+"/"+d.addr, nil, d.p.Logger, nil)
	wg.Wait()
}

// findPeers keeps a download's peers up to date with the swarm's other
// members and counts them in a.others.
func (d *distributor) findPeers(ctx context.Context, topologyID string, a *active) {
	conn, dir := d.p.Session.Conn(), d.p.Session.Paths().Swarm(topologyID)
	var watch <-chan zk.Event // re-armed only after it fired
	for {
		var (
			members []string
			err     error
		)
		if watch == nil {
			members, _, watch, err = conn.ChildrenW(dir)
		} else {
			members, _, err = conn.Children(dir)
		}
		if err != nil {
			// Never watch a directory that is missing: it may never come.
			watch = nil
		}
		if err == nil || errors.Is(err, zk.ErrNoNode) {
			peers := make([]torrent.PeerInfo, 0, len(members))
			for _, m := range members {
				if m != d.addr {
					peers = append(peers, torrent.PeerInfo{Addr: torrent.StringAddr(m), Source: torrent.PeerSourceDirect, Trusted: true})
				}
			}
			a.others.Store(int32(len(peers)))
			a.t.AddPeers(peers)
		}
		select {
		case <-ctx.Done():
			return
		case <-watch:
			watch = nil
		case <-time.After(redialEvery):
		}
	}
}
