package nimbus

import (
	"context"
	"time"

	"github.com/nimbusha/nimbus/apistatus"
	"github.com/nimbusha/nimbus/auth"
	"github.com/nimbusha/nimbus/nimbus/topology"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/validate"
)

// SetLogConfig changes a topology's log levels in its StormBase
// (topology.SetLogLevels), where every supervisor running its workers
// reads them and hands them on through the worker protocol, and applies
// each timeout by its own clock: the levels survive a failover, reach
// workers started later, and revert without any nimbus.
func (s *service) SetLogConfig(ctx context.Context, req *nimbusv1.SetLogConfigRequest) (*nimbusv1.SetLogConfigResponse, error) {
	if err := validate.SetLogConfig(req); err != nil {
		return nil, apistatus.ToStatus(err)
	}
	resp := &nimbusv1.SetLogConfigResponse{}
	err := s.transitionOf(ctx, req.GetName(), auth.ActionSetLogConfig, func(string, storedSpec) topology.Change {
		edit := topology.WithinBudget(topology.SetLogLevels(req, time.Now), s.zkBudget(), "set")
		return func(base *clusterv1.StormBase) (bool, error) {
			changed, err := edit(base)
			resp.LogLevels = base.GetLogLevels()
			return changed, err
		}
	})
	if err != nil {
		return nil, apistatus.ToStatus(err)
	}
	s.log.Info("log levels set", "topology", req.GetName(), "set", len(req.GetSet()), "removed", len(req.GetRemove()), "by", auth.Who(ctx))
	return resp, nil
}
