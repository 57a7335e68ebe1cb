package nimbusv1

// Protocol constants that servers and clients share: as much a part of the
// API as the messages, so they live beside them, written by hand (buf
// generates the rest of this package and leaves this file alone).

// A leader-only call that reaches a follower fails with FAILED_PRECONDITION
// and a google.rpc.ErrorInfo detail with this domain and reason, whose
// metadata holds the leader's host:port under MetadataLeaderKey.
const (
	ErrorDomain       = "nimbus.v1"
	ReasonNotLeader   = "NOT_LEADER"
	MetadataLeaderKey = "leader"
)

// LeaderHealthService is the grpc.health.v1 service that is SERVING only on
// the leader, so that a load balancer health-checking it finds the leader.
// The overall service ("") is SERVING while a nimbus has a ZooKeeper session
// and its caches are loaded.
const LeaderHealthService = "nimbus.v1.NimbusService.leader"

// ReadyHealthService is the grpc.health.v1 service that is SERVING while a
// nimbus serves ("" SERVING) and holds, verified, the code of every
// topology a leader needs: it could lead now. Orchestrators probe it for
// startup and readiness, and "" for liveness.
const ReadyHealthService = "nimbus.v1.Ready"

// LiveHealthService is the grpc.health.v1 service that is SERVING from the
// nimbus's start until its stop: the process answers. A liveness probe asks
// it, never "" (NOT_SERVING while ZooKeeper is away, which restarting
// would not cure).
const LiveHealthService = "nimbus.v1.Live"
