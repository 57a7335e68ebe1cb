package view

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/apierr"
	"github.com/nimbusha/nimbus/assign"
	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/codesync"
	"github.com/nimbusha/nimbus/internal/version"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/stats"
)

// View answers reads from the watch-maintained caches: no request costs a
// ZooKeeper read. The cluster and leader summaries are built once per
// change of the caches (and per second, for uptimes) and shared by every
// request until then: thousands of requests a second cost one build. The
// caches are exported for the nimbus's other readers (its health, the
// leader's duties, codesync's gate); nothing but their Run writes them.
type View struct {
	Nimbuses *cluster.DirCache[*clusterv1.NimbusInfo] // /nimbuses, by host:port
	Locks    *cluster.DirCache[*clusterv1.NimbusInfo] // /leader-lock, by node name
	// Versions is /versions: the cluster's identity and version.
	Versions *cluster.DirCache[*clusterv1.ClusterVersion]
	// Identity is nil while ZooKeeper holds the cluster this nimbus
	// belongs to (codesync.Gate.Identity); the cluster summary says what is
	// wrong otherwise. Nil: not checked.
	Identity func() error
	Storms   *cluster.DirCache[*clusterv1.StormBase] // /storms, by topology id
	Replicas *cluster.ReplicaCache                   // /code-distributor
	// /supervisors and /assignments, by supervisor and topology id.
	Supervisors *cluster.DirCache[*clusterv1.SupervisorInfo]
	Assignments *cluster.DirCache[*clusterv1.Assignment]
	Lost        *cluster.DirCache[*clusterv1.LostMark] // codesync/lost.go
	now         func() time.Time
	// beats has reads refresh the supervisors' payloads (workers.go).
	beats *heartbeatReads
	// Stats are the workers' counts in Storm's windows, from the
	// heartbeats RunStats reads (stats.go).
	Stats *stats.Aggregator

	// share, if not nil, is told of each answer built (nil when the build
	// failed) and the one it replaces (the server encodes it once for
	// every request).
	share func(m, old proto.Message)

	cluster built[*nimbusv1.GetClusterInfoResponse]
	leading built[*nimbusv1.GetLeaderResponse]
	standby built[*nimbusv1.ClusterSummary] // failover's, not sent as is
	// holding is who holds which code (holdings), built when the
	// topologies, replicas, LOST marks or nimbuses change, not every
	// second as the summaries are for their uptimes.
	holdMu  sync.Mutex
	holdKey viewKey
	holding *holdings
	// clusterIdx indexes the last summary a part was picked from
	// (clusterpart.go).
	clusterIdx atomic.Pointer[clusterIndex]
}

// built is an answer and the state it was built from. Its lock serialises
// its builds, one per key however many ask; answers have a lock each, so
// a small one never waits behind a large one.
type built[M proto.Message] struct {
	mu     sync.Mutex
	unsent bool // not an answer: share need not encode it
	done   bool
	key    viewKey
	msg    M
	err    error
}

// viewKey identifies the caches' state and the second a summary was built
// in: equal keys give equal summaries.
type viewKey struct {
	nimbuses, locks, storms, replicas, supervisors, assignments, lost, versions uint64
	second                                                                      int64
}

// versionsGen is the Versions cache's generation; 0 without one (views
// made by hand in tests).
func (v *View) versionsGen() uint64 {
	if v.Versions == nil {
		return 0
	}
	return v.Versions.Gen()
}

// leaderKey is key without the caches that the leader's summary and
// failover do not read: a heartbeat read or an assignment written does not
// rebuild them.
func (v *View) leaderKey() viewKey {
	k := v.key()
	k.supervisors, k.assignments = 0, 0
	return k
}

func (v *View) key() viewKey {
	return viewKey{
		nimbuses: v.Nimbuses.Gen(), locks: v.Locks.Gen(), storms: v.Storms.Gen(), replicas: v.Replicas.Gen(),
		supervisors: v.Supervisors.Gen(), assignments: v.Assignments.Gen(), lost: v.Lost.Gen(), versions: v.versionsGen(), second: v.now().Unix(),
	}
}

// cached returns b's answer if it was built from state k, else builds and
// keeps it.
func cached[M proto.Message](v *View, b *built[M], k viewKey, build func() (M, error)) (M, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done && b.key == k {
		return b.msg, b.err
	}
	// A failed build replaces the shared answer with none: the codec must
	// forget the old one then too, or every leaderless spell leaks one.
	var old, next proto.Message
	if b.done && b.err == nil {
		old = b.msg
	}
	b.msg, b.err = build()
	b.done, b.key = true, k
	if b.err == nil {
		next = b.msg
	}
	if v.share != nil && !b.unsent {
		v.share(next, old)
	}
	return b.msg, b.err
}

// New makes the caches of every directory the view reads; share, if
// not nil, hears of each answer built (see View.share). The directories of
// the layout are re-created if deleted by hand (the whole root, say): a
// cluster without them could not elect or submit.
func New(sess *cluster.Session, heartbeat time.Duration, share func(m, old proto.Message), log *slog.Logger) *View {
	paths := sess.Paths()
	v := &View{
		Nimbuses: cluster.NewNimbusInfoCache(sess, paths.Nimbuses(), log).Recreate(),
		Locks:    cluster.NewNimbusInfoCache(sess, paths.LeaderLock(), log).Recreate(),
		Storms:   cluster.NewDirCache(sess, paths.Storms(), func() *clusterv1.StormBase { return new(clusterv1.StormBase) }, log).Recreate(),
		Replicas: cluster.NewReplicaCache(sess, log),
		// Heartbeats rewrite supervisors' nodes every few seconds: watching
		// them would cost every nimbus a read per heartbeat. Membership is
		// watched; the leader refreshes the payloads (the leader's duties).
		Supervisors: cluster.NewDirCache(sess, paths.Supervisors(),
			func() *clusterv1.SupervisorInfo { return new(clusterv1.SupervisorInfo) }, log).Recreate().MembersOnly(),
		Assignments: cluster.NewDirCache(sess, paths.Assignments(),
			func() *clusterv1.Assignment { return new(clusterv1.Assignment) }, log).Recreate(),
		Lost: cluster.NewDirCache(sess, paths.LostDir(),
			func() *clusterv1.LostMark { return new(clusterv1.LostMark) }, log).Recreate(),
		Versions: cluster.NewDirCache(sess, paths.Versions(),
			func() *clusterv1.ClusterVersion { return new(clusterv1.ClusterVersion) }, log).Recreate(),
		now:   time.Now,
		beats: &heartbeatReads{every: heartbeat},
		Stats: stats.NewAggregator(0),
		share: share,
	}
	v.Replicas.Distributions.Recreate()
	v.standby.unsent = true
	return v
}

// Caches are the view's caches, to Run.
func (v *View) Caches() []interface{ Run(context.Context) error } {
	return []interface{ Run(context.Context) error }{v.Nimbuses, v.Locks, v.Storms, v.Replicas, v.Supervisors, v.Assignments, v.Lost, v.Versions}
}

// LeaderInfo is GetLeader's answer, shared: callers must not modify it.
func (v *View) LeaderInfo() (*nimbusv1.GetLeaderResponse, error) {
	return cached(v, &v.leading, v.leaderKey(), func() (*nimbusv1.GetLeaderResponse, error) {
		l, err := v.leaderSummary()
		if err != nil {
			return nil, err
		}
		return &nimbusv1.GetLeaderResponse{Leader: l}, nil
	})
}

// ClusterInfo is GetClusterInfo's answer, shared: callers must not modify
// it.
func (v *View) ClusterInfo() *nimbusv1.GetClusterInfoResponse {
	v.freshenHeartbeats()
	c, _ := cached(v, &v.cluster, v.key(), func() (*nimbusv1.GetClusterInfoResponse, error) {
		return &nimbusv1.GetClusterInfoResponse{Cluster: v.clusterSummary()}, nil
	})
	return c
}

// freshenHeartbeats asks the supervisors' cache to read their payloads
// again if a period passed since it last asked (heartbeatReads). It does
// not wait for the read.
func (v *View) freshenHeartbeats() {
	if v.beats.due(v.now()) {
		v.Supervisors.Refresh()
	}
}

// Leader returns the head of the lock queue and its epoch.
func (v *View) Leader() (*clusterv1.NimbusInfo, int64, bool) {
	q := cluster.Queue(v.Locks.Snapshot())
	if len(q) == 0 || q[0].Info == nil {
		return nil, 0, false // none, or the head's payload is unreadable
	}
	return q[0].Info, q[0].Epoch(), true
}

// leaderSummary describes the leader.
func (v *View) leaderSummary() (*nimbusv1.NimbusSummary, error) {
	head, epoch, ok := v.Leader()
	if !ok {
		return nil, apierr.ErrNoLeader
	}
	reg := v.Nimbuses.Snapshot()[cluster.HostPort(head)]
	s := v.summary(head, reg, v.holdings())
	s.IsLeader, s.Epoch = true, epoch
	return s, nil
}

// Failover is the part of the cluster summary that says who can lead:
// the nimbuses, the eligible standbys, and the topologies that block
// leadership or are LOST. It reads no supervisor or assignment; built
// once a second for the nimbuses' uptimes, it takes who holds what from
// holdings, which only changes with what it reads. Shared: callers must
// not modify it.
func (v *View) Failover() *nimbusv1.ClusterSummary {
	c, _ := cached(v, &v.standby, v.leaderKey(), func() (*nimbusv1.ClusterSummary, error) {
		h := v.holdings()
		c := &nimbusv1.ClusterSummary{Nimbuses: v.nimbusSummaries(h), LeadershipBlockedBy: h.blocked, LostTopologies: h.lost}
		for _, n := range c.Nimbuses {
			if n.HoldsAllCode && !n.IsLeader {
				c.EligibleStandbys++
			}
		}
		return c, nil
	})
	return c
}

// holdings is who holds which code: the topologies each nimbus lacks, by
// address; those no nimbus holds (they block leadership); those LOST.
// Shared: not to be modified.
type holdings struct {
	missing map[string][]string // sorted; a nimbus holding all is absent
	blocked []string            // sorted
	lost    []string            // sorted
}

// holdings returns who holds which code as of the caches now, built again
// only when /storms, the replica lists, /lost or the nimbuses changed: a
// pass over every topology, looking up its replicas once.
func (v *View) holdings() *holdings {
	k := v.leaderKey()
	k.second = 0
	v.holdMu.Lock()
	defer v.holdMu.Unlock()
	if v.holding != nil && v.holdKey == k {
		return v.holding
	}
	storms := v.Storms.Snapshot()
	lost := codesync.LostMarks(storms, v.Lost.Snapshot())
	addrs := v.nimbusAddrs()
	h := &holdings{missing: map[string][]string{}}
	for id, base := range storms {
		if base == nil {
			continue // unreadable: no code to hold (codesync skips it too)
		}
		replicas := v.Replicas.Replicas(id)
		for _, addr := range addrs {
			if !cluster.Holds(replicas[addr], base.GetCodeMetaDigest()) {
				h.missing[addr] = append(h.missing[addr], id)
			}
		}
		switch {
		case lost[id] != nil: // blocks nothing (codesync)
			h.lost = append(h.lost, id)
		case cluster.CountHolding(replicas, base.GetCodeMetaDigest()) == 0:
			h.blocked = append(h.blocked, id)
		}
	}
	for _, ids := range h.missing {
		sort.Strings(ids)
	}
	sort.Strings(h.blocked)
	sort.Strings(h.lost)
	v.holding, v.holdKey = h, k
	return h
}

// nimbusAddrs are the addresses of the registered nimbuses and of the
// leader.
func (v *View) nimbusAddrs() []string {
	var addrs []string
	for addr, reg := range v.Nimbuses.Snapshot() {
		if reg != nil {
			addrs = append(addrs, addr)
		}
	}
	if head, _, ok := v.Leader(); ok && !slices.Contains(addrs, cluster.HostPort(head)) {
		addrs = append(addrs, cluster.HostPort(head))
	}
	return addrs
}

// clusterSummary describes the cluster.
func (v *View) clusterSummary() *nimbusv1.ClusterSummary {
	f := v.Failover()
	storms := v.Storms.Snapshot()
	sups, assignments := v.Supervisors.Snapshot(), v.Assignments.Snapshot()
	idx := indexWorkers(sups)
	c := &nimbusv1.ClusterSummary{
		Nimbuses: f.GetNimbuses(), EligibleStandbys: f.GetEligibleStandbys(),
		LeadershipBlockedBy: f.GetLeadershipBlockedBy(), LostTopologies: f.GetLostTopologies(),
	}
	c.ClusterVersion, _ = v.ClusterVersion()
	if err := v.identity(); err != nil {
		c.ClusterStateProblem = err.Error()
	}
	lost := codesync.LostMarks(storms, v.Lost.Snapshot())
	for id, base := range storms {
		t := v.topologySummary(id, base, lost)
		if base != nil {
			countWorkers(t, base, assignedWorkers(id, assignments[id], sups, idx, false))
		}
		c.Topologies = append(c.Topologies, t)
	}
	slices.SortFunc(c.Topologies, func(a, b *nimbusv1.TopologySummary) int {
		return compareTopology(a, topologyKey{Name: b.GetName(), ID: b.GetId()})
	})
	used := usedSlots(assignments)
	for id, info := range sups {
		if info == nil {
			continue
		}
		sum := &nimbusv1.SupervisorSummary{
			SupervisorId: id, Host: info.GetHost(), Version: info.GetVersion(), Release: version.ReleaseOf(info.GetRelease()),
			NumWorkers: int32(len(info.GetSlotPorts())), NumUsedWorkers: used[id],
			Workers: supervisorWorkers(id, info), LogviewerUrl: logviewerURL(info),
		}
		if start := info.GetStartTimeUnixMs(); start > 0 {
			sum.UptimeSecs = int64(v.now().Sub(time.UnixMilli(start)) / time.Second)
		}
		c.Supervisors = append(c.Supervisors, sum)
		c.NumSlots += sum.NumWorkers
		c.NumUsedSlots += sum.NumUsedWorkers
	}
	sort.Slice(c.Supervisors, func(i, j int) bool { return c.Supervisors[i].SupervisorId < c.Supervisors[j].SupervisorId })
	c.NumTopologies, c.NumSupervisors = int32(len(c.Topologies)), int32(len(c.Supervisors))
	return c
}

// identity is Identity's answer once /versions is loaded (nil before: an
// empty cache is no evidence of a wiped root).
func (v *View) identity() error {
	if v.Identity == nil {
		return nil
	}
	select {
	case <-v.Versions.Loaded():
		return v.Identity()
	default:
		return nil
	}
}

// ClusterVersion is the lowest release any registered nimbus or
// supervisor runs (version.Lowest), and up to maxLowest of the daemons at
// it (nimbuses by host:port, supervisors by id), sorted: what holds it
// back. "" when nothing is registered.
func (v *View) ClusterVersion() (string, []string) {
	releases := map[string]string{}
	for addr, n := range v.Nimbuses.Snapshot() {
		if n != nil {
			releases[addr] = n.GetRelease()
		}
	}
	for id, s := range v.Supervisors.Snapshot() {
		if s != nil {
			releases[id] = s.GetRelease()
		}
	}
	lowest := version.Lowest(slices.Collect(maps.Values(releases))...)
	var at []string
	for daemon, r := range releases {
		if version.Lowest(r) == lowest {
			at = append(at, daemon)
		}
	}
	slices.Sort(at)
	return lowest, at[:min(len(at), maxLowest)]
}

// maxLowest bounds the daemons ClusterVersion names.
const maxLowest = 10

// usedSlots counts, per supervisor, the slots the assignments give work
// (as Storm does); what runs in them is the supervisor's Workers.
func usedSlots(assignments map[string]*clusterv1.Assignment) map[string]int32 {
	slots := map[assign.Slot]bool{}
	for _, a := range assignments {
		for _, ea := range a.GetExecutors() {
			slots[assign.Slot{SupervisorID: ea.GetSlot().GetSupervisorId(), Port: ea.GetSlot().GetPort()}] = true
		}
	}
	used := map[string]int32{}
	for s := range slots {
		used[s.SupervisorID]++
	}
	return used
}

// nimbusSummaries lists every registered nimbus, by address, and the
// leader even if its registration is not visible yet.
func (v *View) nimbusSummaries(h *holdings) []*nimbusv1.NimbusSummary {
	head, epoch, hasLeader := v.Leader()
	leaderAddr := ""
	if hasLeader {
		leaderAddr = cluster.HostPort(head)
	}
	regs := v.Nimbuses.Snapshot()
	out := make([]*nimbusv1.NimbusSummary, 0, len(regs)+1)
	for addr, reg := range regs {
		if reg == nil {
			continue // undecodable registration, logged by the cache
		}
		s := v.summary(reg, reg, h)
		if addr == leaderAddr {
			s.IsLeader, s.Epoch = true, epoch
		}
		out = append(out, s)
	}
	if _, ok := regs[leaderAddr]; hasLeader && !ok {
		s := v.summary(head, nil, h)
		s.IsLeader, s.Epoch = true, epoch
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b *nimbusv1.NimbusSummary) int {
		return cmp.Or(cmp.Compare(a.GetHost(), b.GetHost()), cmp.Compare(a.GetPort(), b.GetPort()))
	})
	return out
}

// summary describes the nimbus at id's address; reg, its registration,
// may be nil. Whether it holds all code comes from h.
func (v *View) summary(id, reg *clusterv1.NimbusInfo, h *holdings) *nimbusv1.NimbusSummary {
	s := &nimbusv1.NimbusSummary{Host: id.GetHost(), Port: id.GetPort()}
	if reg != nil {
		s.Version, s.Release = reg.GetVersion(), version.ReleaseOf(reg.GetRelease())
		if start := reg.GetStartTimeUnixMs(); start > 0 {
			s.UptimeSecs = int64(v.now().Sub(time.UnixMilli(start)) / time.Second)
		}
	}
	s.MissingTopologyIds = h.missing[cluster.HostPort(id)]
	s.HoldsAllCode = len(s.MissingTopologyIds) == 0
	return s
}

// replicaAddrs lists the replicas of id that hold digest, by address.
func (v *View) replicaAddrs(id string, digest []byte) []*clusterv1.ReplicaInfo {
	replicas := v.Replicas.Replicas(id)
	addrs := make([]string, 0, len(replicas))
	for addr, r := range replicas {
		if cluster.Holds(r, digest) {
			addrs = append(addrs, addr)
		}
	}
	slices.Sort(addrs)
	out := make([]*clusterv1.ReplicaInfo, len(addrs))
	for i, addr := range addrs {
		out[i] = replicas[addr]
	}
	return out
}

// topologySummary describes topology id; lost are the LOST marks that
// apply (codesync.LostMarks).
func (v *View) topologySummary(id string, base *clusterv1.StormBase, lost map[string]*clusterv1.LostMark) *nimbusv1.TopologySummary {
	t := &nimbusv1.TopologySummary{Id: id}
	if base == nil {
		return t // undecodable: shown by id only
	}
	t.Name, t.Status, t.Owner, t.NumWorkers = base.GetName(), base.GetStatus(), base.GetOwner(), base.GetNumWorkers()
	for _, n := range base.GetComponentExecutors() {
		t.NumExecutors += n
	}
	if launch := base.GetLaunchTimeUnixSecs(); launch > 0 {
		t.UptimeSecs = int64(v.now().Sub(time.Unix(launch, 0)) / time.Second)
	}
	if mark := lost[id]; mark != nil {
		t.LostReason, t.LostSinceUnixMs = mark.GetReason(), mark.GetSinceUnixMs()
	}
	replicas := v.replicaAddrs(id, base.GetCodeMetaDigest())
	t.ReplicationCount = int32(len(replicas))
	for _, r := range replicas {
		if r.GetRecoveredFrom() != "" {
			t.RecoveredFrom, t.RecoveredUnixMs = r.GetRecoveredFrom(), r.GetRecoveredUnixMs()
			break
		}
	}
	return t
}

// ByName finds a topology in /storms by name.
func (v *View) ByName(name string) (string, *clusterv1.StormBase, error) {
	for id, base := range v.Storms.Snapshot() {
		if base != nil && base.GetName() == name {
			return id, base, nil
		}
	}
	return "", nil, fmt.Errorf("%w: %q", apierr.ErrNotFound, name)
}

// TopologyInfo is GetTopologyInfo's answer, with each worker's log tail
// if tails.
func (v *View) TopologyInfo(name string, tails bool) (*nimbusv1.GetTopologyInfoResponse, error) {
	v.freshenHeartbeats()
	id, base, err := v.ByName(name)
	if err != nil {
		return nil, err
	}
	sups := v.Supervisors.Snapshot()
	a := v.Assignments.Snapshot()[id]
	resp := &nimbusv1.GetTopologyInfoResponse{
		Topology:             v.topologySummary(id, base, codesync.LostMarks(map[string]*clusterv1.StormBase{id: base}, v.Lost.Snapshot())),
		CodeMetaDigest:       base.GetCodeMetaDigest(),
		ComponentParallelism: base.GetComponentExecutors(),
		SpoutIds:             base.GetSpoutIds(),
		LogLevels:            liveLogLevels(base.GetLogLevels(), v.now()),
	}
	for _, r := range v.replicaAddrs(id, base.GetCodeMetaDigest()) {
		resp.Replicas = append(resp.Replicas, &nimbusv1.ReplicaSummary{Host: r.GetHost(), Port: r.GetPort()})
	}
	resp.Workers = assignedWorkers(id, a, sups, indexWorkers(supervisorsOf(a, sups)), tails)
	countWorkers(resp.Topology, base, resp.Workers)
	if a != nil {
		for _, ea := range a.GetExecutors() {
			sum := &nimbusv1.ExecutorSummary{
				Executor: ea.GetExecutor(), SupervisorId: ea.GetSlot().GetSupervisorId(),
				Host: a.GetSupervisorHosts()[ea.GetSlot().GetSupervisorId()], Port: ea.GetSlot().GetPort(),
			}
			if start := ea.GetStartTimeUnixSecs(); start > 0 {
				sum.UptimeSecs = int64(v.now().Sub(time.Unix(start, 0)) / time.Second)
			}
			resp.Executors = append(resp.Executors, sum)
		}
	}
	return resp, nil
}

// liveLogLevels are a topology's log levels whose timeout has not passed,
// or that have a level to go back to: what its workers are told now.
func liveLogLevels(levels map[string]*clusterv1.LoggerLevel, now time.Time) map[string]*clusterv1.LoggerLevel {
	out := map[string]*clusterv1.LoggerLevel{}
	for name, l := range levels {
		if l.GetTimeoutUnixMs() == 0 || l.GetTimeoutUnixMs() > now.UnixMilli() || l.GetResetLevel() != "" {
			out[name] = l
		}
	}
	return out
}
