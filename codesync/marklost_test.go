package codesync

import (
	"log/slog"
	"testing"
	"time"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// A LOST mark is written only while its topology's StormBase exists: a
// fetch loop whose grace runs out just as the topology is killed or
// forgotten leaves no mark behind it.
func TestMarkLostOnlyWhileTheTopologyExists(t *testing.T) {
	sess := zkSession(t)
	paths, conn := sess.Paths(), sess.Conn()
	if err := sess.EnsureDirs(paths.Storms(), paths.LostDir()); err != nil {
		t.Fatal(err)
	}
	s := New(Config{Gate: Gate{Session: sess}, Self: &clusterv1.NimbusInfo{Host: "127.0.0.1", Port: 1}, Logger: slog.New(slog.DiscardHandler)})
	digest := make([]byte, 32)
	if _, err := conn.Create(paths.Storm("here-1-1"), cluster.Encode(&clusterv1.StormBase{Name: "here"}), 0, sess.ACL()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		id     string
		marked bool
	}{{"gone-1-1", false}, {"here-1-1", true}} {
		h := &heldNowhere{grace: time.Second, since: time.Now().Add(-time.Minute)}
		s.markLost(tc.id, digest, h)
		if ok, _, err := conn.Exists(paths.Lost(tc.id)); err != nil || ok != tc.marked {
			t.Fatalf("%s: LOST mark exists: %v (%v), want %v", tc.id, ok, err, tc.marked)
		}
		if !h.marked {
			t.Fatalf("%s: the fetch loop would try to mark it again", tc.id)
		}
	}
}

// zkSession starts a ZooKeeper and returns a session on it, under /storm,
// closed when the test ends.
func zkSession(t *testing.T) *cluster.Session {
	t.Helper()
	z := testcluster.StartZooKeeper(t)
	sess, err := cluster.Connect(t.Context(), cluster.SessionConfig{
		Servers: []string{z.Addr()}, SessionTimeout: 4 * time.Second, ConnectTimeout: 10 * time.Second, Root: "/storm",
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sess.Close)
	return sess
}
