package blobstore

import (
	"time"

	"github.com/nimbusha/nimbus/cluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// File is the one file of a blob's bundle: the content.
const File = "blob"

// Blob states, as BlobInfo.state shows them.
const (
	StateOK              = "OK"
	StateUnderReplicated = "UNDER_REPLICATED"
	// StateLost: no nimbus holds the current version. The Syncers recover
	// it from a supervisor that placed it, if one did; it blocks nothing.
	StateLost = "LOST"
)

// Meta is the meta of a blob version's bundle: the content as File.
func Meta(key string, content *clusterv1.CodeFile) *clusterv1.CodeMeta {
	return &clusterv1.CodeMeta{TopologyId: key, Files: []*clusterv1.CodeFile{content}}
}

// Info summarizes a blob for the API, counting the replicas that hold its
// current version.
func Info(key string, m *clusterv1.BlobMeta, replicas map[string]*clusterv1.ReplicaInfo) *nimbusv1.BlobInfo {
	n := cluster.CountHolding(replicas, m.GetCodeMetaDigest())
	state := StateOK
	switch {
	case n == 0:
		state = StateLost
	case n < int(m.GetReplicationFactor()):
		state = StateUnderReplicated
	}
	return &nimbusv1.BlobInfo{
		Key: key, Version: m.GetVersion(), ContentSha256: m.GetContentSha256(), Size: m.GetSize(),
		Owner: m.GetOwner(), Acl: m.GetAcl(), ReplicationFactor: m.GetReplicationFactor(),
		ReplicationCount: int32(n), State: state,
		CreatedUnixMs: m.GetCreatedUnixMs(), UpdatedUnixMs: m.GetUpdatedUnixMs(),
	}
}

// NewVersion is the BlobMeta of a blob's next version: version one more,
// the new content, the rest kept.
func NewVersion(prev *clusterv1.BlobMeta, digest []byte, content *clusterv1.CodeFile, epoch int64, now time.Time) *clusterv1.BlobMeta {
	return &clusterv1.BlobMeta{
		CodeMetaDigest: digest, ContentSha256: content.GetSha256(), Size: content.GetSize(),
		Version: prev.GetVersion() + 1, Owner: prev.GetOwner(), Acl: prev.GetAcl(),
		ReplicationFactor: prev.GetReplicationFactor(), CreatedUnixMs: prev.GetCreatedUnixMs(),
		UpdatedUnixMs: now.UnixMilli(), Epoch: epoch,
	}
}
