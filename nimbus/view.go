package nimbus

import (
	"sort"
	"time"

	"github.com/nimbusha/nimbus/cluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// view answers read RPCs from the watch-maintained caches: no request
// costs a ZooKeeper read.
type view struct {
	nimbuses *cluster.DirCache[*clusterv1.NimbusInfo] // /nimbuses, by host:port
	locks    *cluster.DirCache[*clusterv1.NimbusInfo] // /leader-lock, by node name
	now      func() time.Time
}

// leader returns the head of the lock queue and its epoch.
func (v *view) leader() (*clusterv1.NimbusInfo, int64, bool) {
	q := cluster.Queue(v.locks.Snapshot())
	if len(q) == 0 || q[0].Info == nil {
		return nil, 0, false // none, or the head's payload is unreadable
	}
	return q[0].Info, q[0].Epoch(), true
}

// leaderSummary is GetLeader's answer.
func (v *view) leaderSummary() (*nimbusv1.NimbusSummary, error) {
	head, epoch, ok := v.leader()
	if !ok {
		return nil, ErrNoLeader
	}
	reg := v.nimbuses.Snapshot()[cluster.HostPort(head)]
	s := v.summary(head, reg)
	s.IsLeader, s.Epoch = true, epoch
	return s, nil
}

// nimbusSummaries lists every registered nimbus, by address, and the
// leader even if its registration is not visible yet.
func (v *view) nimbusSummaries() []*nimbusv1.NimbusSummary {
	head, epoch, hasLeader := v.leader()
	leaderAddr := ""
	if hasLeader {
		leaderAddr = cluster.HostPort(head)
	}
	regs := v.nimbuses.Snapshot()
	out := make([]*nimbusv1.NimbusSummary, 0, len(regs)+1)
	for addr, reg := range regs {
		if reg == nil {
			continue // undecodable registration, logged by the cache
		}
		s := v.summary(reg, reg)
		if addr == leaderAddr {
			s.IsLeader, s.Epoch = true, epoch
		}
		out = append(out, s)
	}
	if _, ok := regs[leaderAddr]; hasLeader && !ok {
		s := v.summary(head, nil)
		s.IsLeader, s.Epoch = true, epoch
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Host != out[j].Host {
			return out[i].Host < out[j].Host
		}
		return out[i].Port < out[j].Port
	})
	return out
}

// summary describes the nimbus at id's address; reg, its registration,
// may be nil.
func (v *view) summary(id, reg *clusterv1.NimbusInfo) *nimbusv1.NimbusSummary {
	s := &nimbusv1.NimbusSummary{Host: id.GetHost(), Port: id.GetPort()}
	if reg != nil {
		s.Version = reg.GetVersion()
		if start := reg.GetStartTimeUnixMs(); start > 0 {
			s.UptimeSecs = int64(v.now().Sub(time.UnixMilli(start)) / time.Second)
		}
	}
	return s
}
