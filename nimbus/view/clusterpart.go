package view

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"slices"

	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/validate"
)

// A GetClusterInfo that asks for part of the cluster (some lists left
// out, some topologies or supervisors, a page) is picked from the shared
// whole (View.ClusterInfo), so its cost is what it returns plus a look-up,
// not the cluster's size: at five thousand topologies, one of them is a
// few hundred bytes instead of megabytes.

// wantsWhole reports whether req asks for the whole cluster, which every
// such request shares, encoded once.
func wantsWhole(req *nimbusv1.GetClusterInfoRequest) bool {
	return !req.GetOmitNimbuses() && !req.GetOmitSupervisors() && !req.GetOmitTopologies() &&
		len(req.GetTopologies()) == 0 && len(req.GetSupervisors()) == 0 && req.GetPageSize() == 0 && req.GetPageToken() == ""
}

// clusterIndex finds topologies and supervisors in one built summary.
type clusterIndex struct {
	of          *nimbusv1.ClusterSummary
	topologies  map[string][]int // positions, by name and by id
	supervisors map[string][]int // positions, by id and by host
}

func newClusterIndex(c *nimbusv1.ClusterSummary) *clusterIndex {
	x := &clusterIndex{of: c, topologies: map[string][]int{}, supervisors: map[string][]int{}}
	for i, t := range c.GetTopologies() {
		add(x.topologies, i, t.GetName(), t.GetId())
	}
	for i, s := range c.GetSupervisors() {
		add(x.supervisors, i, s.GetSupervisorId(), s.GetHost())
	}
	return x
}

// add files position i under each distinct non-empty key.
func add(m map[string][]int, i int, keys ...string) {
	for j, k := range keys {
		if k != "" && !slices.Contains(keys[:j], k) {
			m[k] = append(m[k], i)
		}
	}
}

// index returns the index of c, building it once per summary built.
func (v *View) index(c *nimbusv1.ClusterSummary) *clusterIndex {
	if x := v.clusterIdx.Load(); x != nil && x.of == c {
		return x
	}
	x := newClusterIndex(c)
	v.clusterIdx.Store(x)
	return x
}

// ClusterPart answers a GetClusterInfo request (validated) from the
// shared whole: the whole itself when req asks for it all.
func (v *View) ClusterPart(req *nimbusv1.GetClusterInfoRequest) (*nimbusv1.GetClusterInfoResponse, error) {
	whole := v.ClusterInfo()
	if wantsWhole(req) {
		return whole, nil
	}
	return partOf(v.index(whole.GetCluster()), req)
}

// partOf picks what req asks for from the summary x indexes. The answer
// shares x's messages: neither may be modified.
func partOf(x *clusterIndex, req *nimbusv1.GetClusterInfoRequest) (*nimbusv1.GetClusterInfoResponse, error) {
	after, err := decodePageToken(req.GetPageToken())
	if err != nil {
		return nil, err
	}
	c := x.of
	part := &nimbusv1.ClusterSummary{
		EligibleStandbys: c.GetEligibleStandbys(), LeadershipBlockedBy: c.GetLeadershipBlockedBy(), LostTopologies: c.GetLostTopologies(),
		ClusterVersion: c.GetClusterVersion(), ClusterStateProblem: c.GetClusterStateProblem(),
		NumTopologies: c.GetNumTopologies(), NumSupervisors: c.GetNumSupervisors(), NumSlots: c.GetNumSlots(), NumUsedSlots: c.GetNumUsedSlots(),
	}
	if !req.GetOmitNimbuses() {
		part.Nimbuses = c.GetNimbuses()
	}
	var next pageCursor
	more := false
	if !req.GetOmitTopologies() {
		all := c.GetTopologies()
		from := 0
		if after.Topology != nil {
			from = sortedAfter(all, func(t *nimbusv1.TopologySummary) int { return compareTopology(t, *after.Topology) })
		}
		var last int
		part.Topologies, last, more = pick(all, from, x.topologies, req.GetTopologies(), int(req.GetPageSize()))
		next.Topology = after.Topology
		if last >= 0 {
			next.Topology = &topologyKey{Name: all[last].GetName(), ID: all[last].GetId()}
		}
	}
	if !req.GetOmitSupervisors() {
		all := c.GetSupervisors()
		from := 0
		if after.Supervisor != nil {
			from = sortedAfter(all, func(s *nimbusv1.SupervisorSummary) int { return cmp.Compare(s.GetSupervisorId(), *after.Supervisor) })
		}
		last, moreSups := 0, false
		part.Supervisors, last, moreSups = pick(all, from, x.supervisors, req.GetSupervisors(), int(req.GetPageSize()))
		more = more || moreSups
		next.Supervisor = after.Supervisor
		if last >= 0 {
			id := all[last].GetSupervisorId()
			next.Supervisor = &id
		}
	}
	resp := &nimbusv1.GetClusterInfoResponse{Cluster: part}
	if more {
		resp.NextPageToken = next.encode()
	}
	return resp, nil
}

// sortedAfter is the first position of all, sorted, whose item compares
// above the cursor (cmp > 0).
func sortedAfter[T any](all []T, compare func(T) int) int {
	i, _ := slices.BinarySearchFunc(all, 0, func(item T, _ int) int {
		if compare(item) <= 0 {
			return -1
		}
		return 1
	})
	return i
}

// pick returns up to limit (0: no limit) items of all from position from
// on, only those under one of keys in index when keys are given; the
// position of the last one taken (-1 if none); and whether more would
// follow.
func pick[T any](all []T, from int, index map[string][]int, keys []string, limit int) (out []T, last int, more bool) {
	last = -1
	positions := func(yield func(int) bool) {
		for i := from; i < len(all); i++ {
			if !yield(i) {
				return
			}
		}
	}
	if len(keys) > 0 {
		var matched []int
		for _, k := range keys {
			for _, i := range index[k] {
				if i >= from {
					matched = append(matched, i)
				}
			}
		}
		slices.Sort(matched)
		matched = slices.Compact(matched)
		positions = slices.Values(matched)
	}
	for i := range positions {
		if limit > 0 && len(out) == limit {
			return out, last, true
		}
		out, last = append(out, all[i]), i
	}
	return out, last, false
}

// compareTopology orders t against a cursor as the summary is sorted: by
// name, then id.
func compareTopology(t *nimbusv1.TopologySummary, k topologyKey) int {
	return cmp.Or(cmp.Compare(t.GetName(), k.Name), cmp.Compare(t.GetId(), k.ID))
}

// pageCursor is where a page ended, in each list: the next page starts
// after it. It travels as an opaque token.
type pageCursor struct {
	Topology   *topologyKey `json:"t,omitempty"`
	Supervisor *string      `json:"s,omitempty"`
}

type topologyKey struct {
	Name string `json:"n"`
	ID   string `json:"i"`
}

// maxPageToken bounds a page token: two names and an id, encoded.
const maxPageToken = 2048

func (c pageCursor) encode() string {
	data, _ := json.Marshal(c) // strings and pointers to them: cannot fail
	return base64.RawURLEncoding.EncodeToString(data)
}

func decodePageToken(token string) (pageCursor, error) {
	var c pageCursor
	if token == "" {
		return c, nil
	}
	if len(token) > maxPageToken {
		return c, validate.Invalid("page_token", "is %d bytes; a token this API gave is at most %d", len(token), maxPageToken)
	}
	data, err := base64.RawURLEncoding.DecodeString(token)
	if err == nil {
		err = json.Unmarshal(data, &c)
	}
	if err != nil {
		return pageCursor{}, validate.Invalid("page_token", "is not a next_page_token this API gave (%v)", err)
	}
	return c, nil
}
