package auth

import (
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	reflectionv1alpha "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"

	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// scope says who decides a method's call.
type scope uint8

const (
	// scopeMethod: the interceptor decides from the method alone.
	scopeMethod scope = iota
	// scopeTopology: the rule needs the topology's owner and
	// topology.users, which only the handler knows; the interceptor
	// authenticates, and the handler asks Authorizer.Topology.
	scopeTopology
)

// method is how the interceptors treat one RPC.
type method struct {
	action   Action
	scope    scope
	mutating bool // changes the cluster: one audit line per call
}

// methods maps every RPC a nimbus serves to its action. A method not here
// is refused with authentication on, so a new RPC is closed until it is
// added (with a row in the tests).
var methods = map[string]method{
	nimbusv1.NimbusService_SubmitTopology_FullMethodName:     {ActionSubmit, scopeMethod, true},
	nimbusv1.NimbusService_KillTopology_FullMethodName:       {ActionKill, scopeTopology, true},
	nimbusv1.NimbusService_ActivateTopology_FullMethodName:   {ActionActivate, scopeTopology, true},
	nimbusv1.NimbusService_DeactivateTopology_FullMethodName: {ActionDeactivate, scopeTopology, true},
	nimbusv1.NimbusService_RebalanceTopology_FullMethodName:  {ActionRebalance, scopeTopology, true},
	nimbusv1.NimbusService_GetClusterInfo_FullMethodName:     {ActionReadCluster, scopeMethod, false},
	nimbusv1.NimbusService_GetLeader_FullMethodName:          {ActionReadCluster, scopeMethod, false},
	nimbusv1.NimbusService_GetTopologyInfo_FullMethodName:    {ActionReadCluster, scopeMethod, false},
	nimbusv1.NimbusService_GetTopologyConf_FullMethodName:    {ActionReadConf, scopeTopology, false},
	nimbusv1.NimbusService_GetNimbusConfig_FullMethodName:    {ActionReadNimbusConfig, scopeMethod, false},
	nimbusv1.NimbusService_ForgetTopology_FullMethodName:     {ActionForget, scopeMethod, true},
	nimbusv1.NimbusService_HandOver_FullMethodName:           {ActionHandOver, scopeMethod, true},
	nimbusv1.NimbusService_SaveSnapshot_FullMethodName:       {ActionSnapshot, scopeMethod, true},
	nimbusv1.NimbusService_RestoreSnapshot_FullMethodName:    {ActionSnapshot, scopeMethod, true},
	nimbusv1.NimbusService_RestartWorker_FullMethodName:      {ActionRestartWorker, scopeTopology, true},
	nimbusv1.NimbusService_SetLogConfig_FullMethodName:       {ActionSetLogConfig, scopeTopology, true},
	// A blob's ACL is the blob's part of the rules: the handler decides
	// (Authorizer.Blob) once it has read it, as for a topology.
	nimbusv1.NimbusService_CreateBlob_FullMethodName:  {ActionCreateBlob, scopeMethod, true},
	nimbusv1.NimbusService_UpdateBlob_FullMethodName:  {ActionWriteBlob, scopeTopology, true},
	nimbusv1.NimbusService_ReadBlob_FullMethodName:    {ActionReadBlob, scopeTopology, false},
	nimbusv1.NimbusService_DeleteBlob_FullMethodName:  {ActionWriteBlob, scopeTopology, true},
	nimbusv1.NimbusService_ListBlobs_FullMethodName:   {ActionReadCluster, scopeMethod, false},
	nimbusv1.NimbusService_SetBlobMeta_FullMethodName: {ActionAdminBlob, scopeTopology, true},

	nimbusv1.CodeService_GetCodeMeta_FullMethodName:  {ActionFetchCode, scopeTopology, false},
	nimbusv1.CodeService_DownloadCode_FullMethodName: {ActionFetchCode, scopeTopology, false},

	healthpb.Health_Check_FullMethodName: {ActionReadCluster, scopeMethod, false},
	healthpb.Health_Watch_FullMethodName: {ActionReadCluster, scopeMethod, false},
	healthpb.Health_List_FullMethodName:  {ActionReadCluster, scopeMethod, false},

	reflectionv1.ServerReflection_ServerReflectionInfo_FullMethodName:      {ActionReadCluster, scopeMethod, false},
	reflectionv1alpha.ServerReflection_ServerReflectionInfo_FullMethodName: {ActionReadCluster, scopeMethod, false},
}

// MethodAction returns the action an RPC (its full method name,
// "/package.Service/Method") maps to, and false for a method the
// interceptors refuse. The handlers of methods whose action is on one
// topology (TopologyScoped) must call Authorizer.Topology.
func MethodAction(fullMethod string) (act Action, topologyScoped, ok bool) {
	m, ok := methods[fullMethod]
	return m.action, m.scope == scopeTopology, ok
}
