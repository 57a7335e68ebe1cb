package blobstore

import (
	"slices"
	"testing"

	"github.com/nimbusha/nimbus/auth"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

func TestNewACL(t *testing.T) {
	for _, c := range []struct {
		given   []string
		creator string
		want    []string
	}{
		{nil, "", []string{"o::rwa"}},                             // no authentication: Storm's WORLD_EVERYTHING
		{nil, "alice", []string{"u:alice:rwa"}},                   // the creator gets everything
		{[]string{"u:alice:r"}, "alice", []string{"u:alice:rwa"}}, // and keeps it
		{[]string{"o::r--", "u:bob:rw"}, "alice", []string{"o::r--", "u:bob:rw-", "u:alice:rwa"}},
		{[]string{"o::r--"}, "", []string{"o::r--"}},
	} {
		got, err := NewACL("acl", c.given, c.creator)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("NewACL(%v, %q) = %v, %v; want %v", c.given, c.creator, got, err, c.want)
		}
	}
	if _, err := NewACL("header.acl", []string{"u:x"}, "alice"); err == nil || err.Error()[:len("header.acl[0]")] != "header.acl[0]" {
		t.Fatalf("a bad entry: %v", err)
	}
}

func TestSetACLKeepsTheCallersAdmin(t *testing.T) {
	got, err := SetACL("acl", []string{"u:bob:r--"}, "carol")
	if err != nil || !slices.Equal(got, []string{"u:bob:r--", "u:carol:--a"}) {
		t.Fatalf("SetACL = %v, %v", got, err)
	}
}

func TestTarget(t *testing.T) {
	m := &clusterv1.BlobMeta{Owner: "alice", Acl: []string{"u:bob:r--", "u:carol:rw-", "o::r--", "garbage"}}
	read := Target("k", m, auth.ActionReadBlob)
	if !read.Anyone || !slices.Equal(read.Grantees, []string{"bob", "carol"}) || read.Owner != "alice" {
		t.Fatalf("read: %+v", read)
	}
	write := Target("k", m, auth.ActionWriteBlob)
	if write.Anyone || !slices.Equal(write.Grantees, []string{"carol"}) {
		t.Fatalf("write: %+v", write)
	}
	if admin := Target("k", m, auth.ActionAdminBlob); admin.Anyone || len(admin.Grantees) != 0 {
		t.Fatalf("admin: %+v", admin)
	}
}

func TestInfoStates(t *testing.T) {
	digest := make([]byte, 32)
	other := append([]byte{1}, make([]byte, 31)...)
	m := &clusterv1.BlobMeta{CodeMetaDigest: digest, ReplicationFactor: 2, Version: 3}
	holds := &clusterv1.ReplicaInfo{Host: "h", Port: 1, CodeMetaDigest: digest}
	old := &clusterv1.ReplicaInfo{Host: "h", Port: 2, CodeMetaDigest: other}
	for _, c := range []struct {
		replicas map[string]*clusterv1.ReplicaInfo
		state    string
		count    int32
	}{
		{nil, StateLost, 0},
		{map[string]*clusterv1.ReplicaInfo{"a": old}, StateLost, 0}, // an older version counts for nothing
		{map[string]*clusterv1.ReplicaInfo{"a": holds, "b": old}, StateUnderReplicated, 1},
		{map[string]*clusterv1.ReplicaInfo{"a": holds, "b": holds, "c": nil}, StateOK, 2},
	} {
		info := Info("k", m, c.replicas)
		if info.GetState() != c.state || info.GetReplicationCount() != c.count || info.GetVersion() != 3 {
			t.Errorf("%v: %s %d", c.replicas, info.GetState(), info.GetReplicationCount())
		}
	}
}
