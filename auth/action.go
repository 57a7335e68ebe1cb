package auth

// Action is what a caller asks to do. Its value is the word audit lines and
// refusals use.
type Action string

// The actions. Every RPC maps to one (methods.go); Decide knows which roles
// may take each (rules.go).
const (
	// ActionSubmit submits a topology (SubmitTopology).
	ActionSubmit Action = "submit"
	// ActionKill kills a topology (KillTopology).
	ActionKill Action = "kill"
	// ActionActivate activates a topology (ActivateTopology).
	ActionActivate Action = "activate"
	// ActionDeactivate deactivates a topology (DeactivateTopology).
	ActionDeactivate Action = "deactivate"
	// ActionRebalance rebalances a topology (RebalanceTopology).
	ActionRebalance Action = "rebalance"
	// ActionReadConf reads a topology's conf, which may hold secrets: for
	// the HTTP API and any RPC that returns the conf by itself. (The conf
	// is also in the code's spec.pb, which ActionFetchCode covers.)
	ActionReadConf Action = "read-conf"
	// ActionFetchCode reads a topology's code bundle: its meta and files,
	// spec.pb (the spec and its conf) among them (CodeService).
	ActionFetchCode Action = "fetch-code"
	// ActionReadCluster reads what any member of the cluster may see:
	// GetLeader, GetClusterInfo, GetTopologyInfo, health, reflection.
	ActionReadCluster Action = "read-cluster"
	// ActionReadNimbusConfig reads a nimbus's own configuration
	// (GetNimbusConfig): the cluster's layout and policy, secrets
	// redacted. Admins only.
	ActionReadNimbusConfig Action = "read-nimbus-config"
	// ActionRecoverCode reads a topology's code from a supervisor's store:
	// how a nimbus that lost every copy gets it back. Nimbuses and admins
	// only; supervisors serve nobody else.
	ActionRecoverCode Action = "recover-code"
	// ActionForget removes a topology marked LOST, with or without a
	// leader (ForgetTopology). Admins only.
	ActionForget Action = "forget"
	// ActionHandOver hands leadership to another nimbus (HandOver). Admins
	// only.
	ActionHandOver Action = "handover"
	// ActionSnapshot saves or restores a snapshot of the cluster
	// (SaveSnapshot, RestoreSnapshot): every topology's conf, and on
	// restore the whole state. Admins only.
	ActionSnapshot Action = "snapshot"
	// ActionRestartWorker restarts one worker of a topology on its slot
	// (RestartWorker). Its owner and admins.
	ActionRestartWorker Action = "restart-worker"
	// ActionReadLogs reads a topology's worker logs on a supervisor's
	// logviewer: what its workers printed, which may hold secrets. Its
	// owner, topology.users, logs.users and admins.
	ActionReadLogs Action = "read-logs"
	// ActionSetLogConfig changes a topology's log levels (SetLogConfig).
	ActionSetLogConfig Action = "set-log-config"
	// ActionCreateBlob stores a new blob (CreateBlob); the caller owns it.
	ActionCreateBlob Action = "create-blob"
	// ActionReadBlob reads a blob's content (ReadBlob), or its bundle from
	// a node's CodeService.
	ActionReadBlob Action = "read-blob"
	// ActionWriteBlob updates or deletes a blob.
	ActionWriteBlob Action = "write-blob"
	// ActionAdminBlob changes a blob's ACL or replication factor.
	ActionAdminBlob Action = "admin-blob"
)

// Actions lists every action, in a fixed order (for tests and docs).
func Actions() []Action {
	return []Action{ActionSubmit, ActionKill, ActionActivate, ActionDeactivate, ActionRebalance,
		ActionReadConf, ActionFetchCode, ActionReadCluster, ActionReadNimbusConfig, ActionRecoverCode, ActionForget, ActionHandOver, ActionSnapshot, ActionRestartWorker, ActionReadLogs, ActionSetLogConfig,
		ActionCreateBlob, ActionReadBlob, ActionWriteBlob, ActionAdminBlob}
}

// phrase is how a refusal says the action: "alice may not <phrase> <topology>".
func (a Action) phrase() string {
	switch a {
	case ActionReadConf:
		return "read the conf of"
	case ActionFetchCode:
		return "fetch the code of"
	case ActionRecoverCode:
		return "recover from a supervisor the code of"
	case ActionReadCluster:
		return "read the cluster"
	case ActionReadNimbusConfig:
		return "read the nimbus configuration"
	case ActionHandOver:
		return "hand leadership over"
	case ActionSnapshot:
		return "save or restore a snapshot of the cluster"
	case ActionRestartWorker:
		return "restart a worker of"
	case ActionSetLogConfig:
		return "set the log levels of"
	case ActionReadLogs:
		return "read the worker logs of"
	case ActionCreateBlob:
		return "create the blob"
	case ActionReadBlob:
		return "read the blob"
	case ActionWriteBlob:
		return "update or delete the blob"
	case ActionAdminBlob:
		return "change the ACL or replication of the blob"
	}
	return string(a)
}
