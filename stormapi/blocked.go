package stormapi

import (
	"fmt"
	"strings"
	"time"

	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// blockedBy is leadershipBlockedBy: why there is no leader, in sentences
// an operator can act on; empty when there is one.
func (a *API) blockedBy(st State) []string {
	if st.Leader != "" {
		return []string{}
	}
	var cs *nimbusv1.ClusterSummary
	if s := a.snap.Load(); s != nil {
		cs = s.info.GetCluster()
	}
	return whyNoLeader(cs, st)
}

// maxListed is how many topologies a reason names before "and N more".
const maxListed = 5

// whyNoLeader explains a leaderless cluster from its summary cs (nil if
// none was read yet) and the answering nimbus's state.
func whyNoLeader(cs *nimbusv1.ClusterSummary, st State) []string {
	var out []string
	if st.CacheAge > 0 {
		out = append(out, fmt.Sprintf("this nimbus has had no ZooKeeper session for %s: it cannot see the leader, if there is one",
			st.CacheAge.Round(time.Second)))
	}
	if cs == nil {
		return append(out, "this nimbus has not read the cluster's state yet")
	}
	if problem := cs.GetClusterStateProblem(); problem != "" {
		return append(out, problem) // nobody leads until it is solved
	}
	names := map[string]string{}
	for _, t := range cs.GetTopologies() {
		names[t.GetId()] = t.GetName()
	}
	for _, id := range cs.GetLeadershipBlockedBy() {
		out = append(out, fmt.Sprintf("topology %s (%s): no nimbus holds its code, and a nimbus may lead only if it holds every topology's", names[id], id))
	}
	var eligible []string
	for _, n := range cs.GetNimbuses() {
		if n.GetHoldsAllCode() {
			eligible = append(eligible, addrOf(n.GetHost(), n.GetPort()))
		}
	}
	switch {
	case len(cs.GetNimbuses()) == 0:
		out = append(out, "no nimbus is registered in ZooKeeper")
	case len(eligible) > 0:
		out = append(out, "an election is under way: "+strings.Join(eligible, ", ")+" hold the code of every topology and may lead")
	case len(cs.GetLeadershipBlockedBy()) == 0:
		for _, n := range cs.GetNimbuses() {
			out = append(out, fmt.Sprintf("nimbus %s cannot lead: it lacks the code of %s", addrOf(n.GetHost(), n.GetPort()), listed(n.GetMissingTopologyIds())))
		}
	}
	return out
}

// listed names up to maxListed of ids, and how many more there are.
func listed(ids []string) string {
	if len(ids) <= maxListed {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ids[:maxListed], ", "), len(ids)-maxListed)
}
