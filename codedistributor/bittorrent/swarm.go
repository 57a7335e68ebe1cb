package bittorrent

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/anacrolix/torrent"

	"github.com/nimbusha/nimbus/cluster"
)

// redialEvery paces the re-reading of a swarm's members while
// downloading: members that refused or dropped a connection are tried
// again, and a missing swarm directory is looked for again.
const redialEvery = 2 * time.Second

// join registers this node in a's swarm until ctx ends; a download also
// takes the other members as its peers.
func (d *distributor) join(ctx context.Context, b bundle, a *active) {
	var wg sync.WaitGroup
	if a.seeded == "" {
		wg.Go(func() { d.findPeers(ctx, b, a) })
	}
	cluster.KeepEphemeral(ctx, d.p.Session, d.swarms(b.kind)+"/"+b.id+"/"+d.addr, nil, d.p.Logger, nil)
	wg.Wait()
}

// findPeers keeps a download's peers up to date with the swarm's other
// members and counts them in a.others.
func (d *distributor) findPeers(ctx context.Context, b bundle, a *active) {
	read := d.p.Session.Read()
	var watch cluster.Watch // re-armed only after it fired
	for {
		members, w, err := read.SwarmMembers(d.swarms(b.kind), b.id, watch == nil)
		if w != nil {
			watch = w
		}
		if err != nil {
			// Never watch a directory that is missing: it may never come.
			watch = nil
		}
		if err == nil || errors.Is(err, cluster.ErrNoNode) {
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
