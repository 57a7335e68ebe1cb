package bittorrent_test

import (
	"testing"
	"time"

	"github.com/nimbusha/nimbus/codedistributor/bittorrent"
	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/testkit/conformance"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
)

// The directory of swarms deleted by hand (with the whole root, say):
// the next upload re-creates it instead of failing every submission.
func TestUploadAfterTheSwarmsDirectoryWasDeleted(t *testing.T) {
	e := conformance.NewEnv(t, bittorrent.Name, func(cfg *configs.Config) { cfg.BittorrentPort = 0 })
	a := e.Node()
	testcluster.DeleteTree(t, e.Session.Conn(), e.Session.Paths().Swarms(), 10*time.Second)
	code, _ := e.Publish(a, "after-1-1", 1<<16)
	if ok, _, err := e.Session.Conn().Exists(e.Session.Paths().Swarm(code.TopologyID)); err != nil || !ok {
		t.Fatalf("swarm after the upload: exists %v (%v)", ok, err)
	}
}
