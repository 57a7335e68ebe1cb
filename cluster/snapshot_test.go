package cluster_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
)

// ReadPersistent takes the persistent nodes, parents first, and leaves the
// ephemeral ones out; WritePersistent puts them back onto an empty root,
// the nodes named last after the others; Existing says which are there
// already, and whether they differ.
func TestPersistentNodesRoundTrip(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	s := connect(t, z.Addr())
	conn, root := s.Conn(), s.Paths().Root
	for _, n := range []struct {
		path  string
		data  string
		flags int32
	}{
		{"/storms", "", 0}, {"/storms/a-1-1", "base-a", 0}, {"/versions", "", 0}, {"/versions/cluster", "id", 0},
		{"/nimbuses", "", 0}, {"/nimbuses/n:1", "registration", zk.FlagEphemeral},
	} {
		if err := cluster.EnsurePath(conn, path.Dir(root+n.path)); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Create(root+n.path, []byte(n.data), n.flags, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
			t.Fatal(err)
		}
	}
	for i := range 600 { // more than one multi's worth when restored
		if _, err := conn.Create(fmt.Sprintf("%s/storms/t-%d-1", root, i), []byte("base"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	nodes, zxid, err := s.ReadPersistent(t.Context())
	if err != nil || zxid == 0 {
		t.Fatalf("read: %v (zxid %d)", err, zxid)
	}
	var paths []string
	for _, n := range nodes {
		if !strings.HasPrefix(n.Path, "storms/t-") {
			paths = append(paths, n.Path)
		}
	}
	if want := []string{"nimbuses", "storms", "versions", "storms/a-1-1", "versions/cluster"}; !slices.Equal(paths, want) || len(nodes) != 605 {
		t.Fatalf("read %d nodes, %v besides the 600, want %v", len(nodes), paths, want)
	}

	// Onto another root, empty: all of it, versions/cluster last.
	other, err := cluster.Connect(t.Context(), cluster.SessionConfig{
		Servers: []string{z.Addr()}, SessionTimeout: 4 * time.Second, Root: "/other", Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.Close)
	if err := other.WritePersistent(t.Context(), nodes, "versions/cluster"); err != nil {
		t.Fatal(err)
	}
	// versions/cluster went last, in a multi of its own.
	_, last, err := other.Conn().Get("/other/versions/cluster")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if _, stat, err := other.Conn().Get("/other/" + n.Path); err != nil || (n.Path != "versions/cluster" && stat.Czxid >= last.Czxid) {
			t.Fatalf("%s written at %d, versions/cluster at %d (%v)", n.Path, stat.Czxid, last.Czxid, err)
		}
	}
	got, _, err := other.ReadPersistent(t.Context())
	if err != nil || len(got) != len(nodes) {
		t.Fatalf("restored %d nodes (%v), want %d", len(got), err, len(nodes))
	}
	for i := range got {
		if got[i].Path != nodes[i].Path || !bytes.Equal(got[i].Data, nodes[i].Data) {
			t.Fatalf("restored %s=%q, want %s=%q", got[i].Path, got[i].Data, nodes[i].Path, nodes[i].Data)
		}
	}
	if _, err := other.Conn().Set("/other/storms/a-1-1", []byte("changed"), -1); err != nil {
		t.Fatal(err)
	}
	differ, same, err := other.Existing(t.Context(), nodes)
	if err != nil || !slices.Equal(differ, []string{"storms/a-1-1"}) || len(same) != len(nodes)-1 {
		t.Fatalf("existing: differ %v, same %v, %v", differ, same, err)
	}
}
