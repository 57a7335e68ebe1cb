package bittorrent

import "github.com/nimbusha/nimbus/codedistributor"

// Connections is how many peers d's torrent of topologyID is connected
// to now; 0 when d holds no torrent of it.
func Connections(d codedistributor.Distributor, topologyID string) int {
	dist := d.(*distributor)
	dist.mu.Lock()
	a := dist.torrents[bundle{codedistributor.KindCode, topologyID}]
	dist.mu.Unlock()
	if a == nil {
		return 0
	}
	return a.t.Stats().ActivePeers
}
