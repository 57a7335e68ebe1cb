package nimbus

import (
	"context"

	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// service implements nimbus.v1.NimbusService. RPCs that later issues
// build answer Unimplemented through the embedded type.
type service struct {
	nimbusv1.UnimplementedNimbusServiceServer
	view *view
}

func (s *service) GetLeader(context.Context, *nimbusv1.GetLeaderRequest) (*nimbusv1.GetLeaderResponse, error) {
	leader, err := s.view.leaderSummary()
	if err != nil {
		return nil, toStatus(err)
	}
	return &nimbusv1.GetLeaderResponse{Leader: leader}, nil
}

func (s *service) GetClusterInfo(context.Context, *nimbusv1.GetClusterInfoRequest) (*nimbusv1.GetClusterInfoResponse, error) {
	return &nimbusv1.GetClusterInfoResponse{Cluster: &nimbusv1.ClusterSummary{
		Nimbuses: s.view.nimbusSummaries(),
	}}, nil
}
