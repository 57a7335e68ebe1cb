package bittorrent_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/nimbusha/nimbus/codedistributor"
	"github.com/nimbusha/nimbus/codedistributor/bittorrent"
	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/testkit/conformance"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
)

func TestConformance(t *testing.T) {
	conformance.Run(t, bittorrent.Name, func(cfg *configs.Config) {
		cfg.BittorrentPort = 0
	})
}

// The swarm in ZooKeeper follows the stores: a node joins when it holds
// the code, leaves when its store drops it, and Cleanup removes the swarm.
func TestSwarmFollowsTheStores(t *testing.T) {
	e := conformance.NewEnv(t, bittorrent.Name, func(cfg *configs.Config) { cfg.BittorrentPort = 0 })
	a, b := e.Node(), e.Node()
	code, _ := e.Publish(a, "swarm-1-1", 1<<20)
	members := func(want int) func() error {
		return func() error {
			m, _, err := e.Session.Conn().Children(e.Session.Paths().Swarm(code.TopologyID))
			if err != nil {
				return err
			}
			if len(m) != want {
				return fmt.Errorf("members %v, want %d", m, want)
			}
			return nil
		}
	}
	testcluster.WaitFor(t, 10*time.Second, "the uploader seeds", members(1))
	if err := b.Fetcher.Fetch(t.Context(), code.TopologyID, code.Digest); err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, 10*time.Second, "the downloader seeds what it installed", members(2))
	if err := b.Store.Remove(code.TopologyID); err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, 10*time.Second, "a node whose store dropped the code leaves", members(1))

	if err := a.Dist.Cleanup(t.Context(), code.TopologyID); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := e.Session.Conn().Exists(e.Session.Paths().Swarm(code.TopologyID)); err != nil || ok {
		t.Fatalf("swarm after cleanup: exists %v (%v)", ok, err)
	}
	ids, err := a.Dist.(codedistributor.Lister).List(t.Context())
	if err != nil || len(ids) != 0 {
		t.Fatalf("List after cleanup: %v (%v)", ids, err)
	}
}

// A downloaded artifact is often the worker program: once installed it
// must run, so no file of it may stay open for writing ("text file busy").
func TestDownloadedProgramRuns(t *testing.T) {
	e := conformance.NewEnv(t, bittorrent.Name, func(cfg *configs.Config) { cfg.BittorrentPort = 0 })
	a, b := e.Node(), e.Node()
	program := []byte("#!/bin/sh\nexit 0\n" + strings.Repeat("# padding to span pieces\n", 40000))
	code := e.PublishData(a, "program-1-1", program)
	if err := b.Fetcher.Fetch(t.Context(), code.TopologyID, code.Digest); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(b.Store.Dir(code.TopologyID), codedistributor.ArtifactFile)
	if err := os.Chmod(path, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(path).CombinedOutput(); err != nil {
		t.Fatalf("run the downloaded program: %v %s", err, out)
	}
}

// A seed serves at most bittorrent.seed.max.peers downloaders at once;
// the others still finish, from those and from each other.
func TestSeedServesAFewDownloadersAtOnce(t *testing.T) {
	e := conformance.NewEnv(t, bittorrent.Name, func(cfg *configs.Config) {
		cfg.BittorrentPort = 0
		cfg.BittorrentSeedPeers = 1
	})
	seed := e.Node()
	code, data := e.Publish(seed, "fanout-1-1", 16<<20)
	testcluster.WaitFor(t, 10*time.Second, "the uploader seeds", func() error {
		if m, _, err := e.Session.Conn().Children(e.Session.Paths().Swarm(code.TopologyID)); err != nil || len(m) != 1 {
			return fmt.Errorf("swarm members %v (%v)", m, err)
		}
		return nil
	})

	var most atomic.Int32
	watching, stop := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watching)
		for {
			if n := int32(bittorrent.Connections(seed.Dist, code.TopologyID)); n > most.Load() {
				most.Store(n)
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	var downloads errgroup.Group
	var nodes []*conformance.Node
	for range 4 {
		n := e.Node()
		nodes = append(nodes, n)
		downloads.Go(func() error { return n.Fetcher.Fetch(t.Context(), code.TopologyID, code.Digest) })
	}
	err := downloads.Wait()
	close(stop)
	<-watching
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		got, err := os.ReadFile(filepath.Join(n.Store.Dir(code.TopologyID), codedistributor.ArtifactFile))
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("a downloader holds %d bytes (%v), want the %d published", len(got), err, len(data))
		}
	}
	if m := most.Load(); m != 1 {
		t.Fatalf("the seed served %d downloaders at once at most, want 1 (bittorrent.seed.max.peers)", m)
	}
}
