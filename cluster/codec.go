package cluster

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"strconv"

	"google.golang.org/protobuf/proto"

	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// ErrInvalidPayload: a node's payload parses but lacks what every writer
// puts there (an empty node, say, or one written by hand).
var ErrInvalidPayload = errors.New("cluster: invalid payload")

// Lives says whether a topology whose StormBase is base (nil: none, or
// never decoded) is in the cluster and not killed: its code must be kept.
func Lives(base *clusterv1.StormBase) bool {
	return base != nil && base.GetStatus() != clusterv1.TopologyStatus_TOPOLOGY_STATUS_KILLED
}

// SlotKey names a worker slot, a supervisor's port, as
// StormBase.worker_restarts keys it: "<supervisor-id>:<port>".
func SlotKey(supervisorID string, port int32) string {
	return supervisorID + ":" + strconv.Itoa(int(port))
}

// Decode parses a node's payload into m and checks that it holds what
// every writer of that kind of node sets, naming the node on failure, so
// a corrupt or foreign znode is reported and skipped, never fatal. Random
// bytes sometimes parse; an empty node always does: the check catches
// both.
func Decode(nodePath string, data []byte, m proto.Message) error {
	if err := proto.Unmarshal(data, m); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrInvalidPayload, nodePath, err)
	}
	if what := lacks(m); what != "" {
		return fmt.Errorf("%w: %s: no %s", ErrInvalidPayload, nodePath, what)
	}
	return nil
}

// lacks names a field that m, a payload read from ZooKeeper, must have and
// does not; "" when it has them all.
func lacks(m proto.Message) string {
	port := func(p int32) bool { return p > 0 && p <= 65535 }
	switch m := m.(type) {
	case *clusterv1.StormBase:
		switch {
		case m.GetName() == "":
			return "name"
		case m.GetStatus() == clusterv1.TopologyStatus_TOPOLOGY_STATUS_UNSPECIFIED:
			return "status"
		case len(m.GetCodeMetaDigest()) != sha256.Size:
			return "code_meta_digest"
		}
	case *clusterv1.Assignment:
		if len(m.GetCodeMetaDigest()) != sha256.Size {
			return "code_meta_digest"
		}
		for _, ea := range m.GetExecutors() {
			if ea.GetExecutor().GetComponentId() == "" || ea.GetSlot().GetSupervisorId() == "" || !port(ea.GetSlot().GetPort()) {
				return "executor with a component and a slot"
			}
		}
	case *clusterv1.SupervisorInfo:
		switch {
		case m.GetSupervisorId() == "":
			return "supervisor_id"
		case m.GetHost() == "":
			return "host"
		}
	case *clusterv1.NimbusInfo:
		if m.GetHost() == "" || !port(m.GetPort()) {
			return "host and port"
		}
	case *clusterv1.ReplicaInfo:
		if m.GetHost() == "" || !port(m.GetPort()) || len(m.GetCodeMetaDigest()) != sha256.Size {
			return "host, port and code_meta_digest"
		}
	case *clusterv1.BlobMeta:
		switch {
		case len(m.GetCodeMetaDigest()) != sha256.Size:
			return "code_meta_digest"
		case len(m.GetContentSha256()) != sha256.Size:
			return "content_sha256"
		case m.GetVersion() < 1:
			return "version"
		}
	case *clusterv1.CodeDistribution:
		if len(m.GetCodeMetaDigest()) != sha256.Size {
			return "code_meta_digest"
		}
	case *clusterv1.ClusterVersion:
		if m.GetRelease() == "" {
			return "release"
		}
	}
	return ""
}

// Encode serializes a payload deterministically.
func Encode(m proto.Message) []byte {
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		// Our own messages always marshal; a failure is a programming error.
		panic(fmt.Sprintf("cluster: encode %T: %v", m, err))
	}
	return data
}
