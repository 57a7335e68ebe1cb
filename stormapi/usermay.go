package stormapi

import (
	"github.com/nimbusha/nimbus/auth"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// userMay is what the caller may do to a topology on its page, so that the
// UI offers only those buttons (the leader decides either way): restart one
// of its workers (its owner, admins) and set its log levels (also its
// topology.users, read from conf, its conf as GetTopologyConf answers it;
// nil when the caller may not read it).
func (a *API) userMay(r *request, id, owner string, conf []*nimbusv1.ConfEntry) (restartWorkers, setLogConfig bool) {
	values := make(map[string]string, len(conf))
	for _, e := range conf {
		if !e.GetRedacted() {
			values[e.GetKey()] = e.GetValue()
		}
	}
	target := auth.Target{Topology: id, Owner: owner, Users: auth.TopologyUsers(values)}
	return a.cfg.Authz.Check(r.ctx, auth.ActionRestartWorker, target) == nil,
		a.cfg.Authz.Check(r.ctx, auth.ActionSetLogConfig, target) == nil
}
