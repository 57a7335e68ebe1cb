package auth_test

import (
	"testing"

	"google.golang.org/grpc"

	"github.com/nimbusha/nimbus/auth"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// TestMethods: every RPC a nimbus serves maps to its action, with the
// right scope; anything else is unknown (refused).
func TestMethods(t *testing.T) {
	for _, tc := range []struct {
		method   string
		act      auth.Action
		topology bool
	}{
		{nimbusv1.NimbusService_SubmitTopology_FullMethodName, auth.ActionSubmit, false},
		{nimbusv1.NimbusService_KillTopology_FullMethodName, auth.ActionKill, true},
		{nimbusv1.NimbusService_ActivateTopology_FullMethodName, auth.ActionActivate, true},
		{nimbusv1.NimbusService_DeactivateTopology_FullMethodName, auth.ActionDeactivate, true},
		{nimbusv1.NimbusService_RebalanceTopology_FullMethodName, auth.ActionRebalance, true},
		{nimbusv1.NimbusService_RestartWorker_FullMethodName, auth.ActionRestartWorker, true},
		{nimbusv1.NimbusService_SetLogConfig_FullMethodName, auth.ActionSetLogConfig, true},
		{nimbusv1.NimbusService_GetClusterInfo_FullMethodName, auth.ActionReadCluster, false},
		{nimbusv1.NimbusService_GetLeader_FullMethodName, auth.ActionReadCluster, false},
		{nimbusv1.NimbusService_GetTopologyInfo_FullMethodName, auth.ActionReadCluster, false},
		{nimbusv1.NimbusService_GetTopologyConf_FullMethodName, auth.ActionReadConf, true},
		{nimbusv1.NimbusService_GetNimbusConfig_FullMethodName, auth.ActionReadNimbusConfig, false},
		{nimbusv1.CodeService_GetCodeMeta_FullMethodName, auth.ActionFetchCode, true},
		{nimbusv1.CodeService_DownloadCode_FullMethodName, auth.ActionFetchCode, true},
		{"/grpc.health.v1.Health/Check", auth.ActionReadCluster, false},
		{"/grpc.health.v1.Health/Watch", auth.ActionReadCluster, false},
		{"/grpc.health.v1.Health/List", auth.ActionReadCluster, false},
		{"/grpc.reflection.v1.ServerReflection/ServerReflectionInfo", auth.ActionReadCluster, false},
		{"/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", auth.ActionReadCluster, false},
	} {
		act, topology, ok := auth.MethodAction(tc.method)
		if !ok || act != tc.act || topology != tc.topology {
			t.Errorf("%s: got %s (topology %v, known %v), want %s (topology %v)", tc.method, act, topology, ok, tc.act, tc.topology)
		}
	}
	for _, m := range []string{"/nimbus.v1.NimbusService/Secret", "/grpc.channelz.v1.Channelz/GetServers", "", "/"} {
		if _, _, ok := auth.MethodAction(m); ok {
			t.Errorf("%q is known", m)
		}
	}
	// Every RPC of the two services is in the table.
	for _, sd := range []struct {
		name    string
		unary   []string
		streams []string
	}{
		{nimbusv1.NimbusService_ServiceDesc.ServiceName, methodNames(nimbusv1.NimbusService_ServiceDesc.Methods), streamNames(nimbusv1.NimbusService_ServiceDesc.Streams)},
		{nimbusv1.CodeService_ServiceDesc.ServiceName, methodNames(nimbusv1.CodeService_ServiceDesc.Methods), streamNames(nimbusv1.CodeService_ServiceDesc.Streams)},
	} {
		for _, m := range append(sd.unary, sd.streams...) {
			if _, _, ok := auth.MethodAction("/" + sd.name + "/" + m); !ok {
				t.Errorf("/%s/%s has no rule", sd.name, m)
			}
		}
	}
}

func methodNames(ms []grpc.MethodDesc) []string {
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = m.MethodName
	}
	return names
}

func streamNames(ss []grpc.StreamDesc) []string {
	names := make([]string, len(ss))
	for i, s := range ss {
		names[i] = s.StreamName
	}
	return names
}
