// Package conformance is the test suite every code distributor backend
// must pass: the same scenarios against real nodes (stores served by the
// real CodeService over gRPC on loopback, a real ZooKeeper), whatever moves
// the bytes.
package conformance

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"google.golang.org/grpc"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/codedistributor"
	"github.com/nimbusha/nimbus/codeservice"
	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/notify"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// Node is one simulated nimbus: a store served by a CodeService, and the
// backend under test.
type Node struct {
	Addr    string
	Store   *codedistributor.Store
	Dist    codedistributor.Distributor
	Fetcher *codedistributor.Fetcher
}

// Env is a ZooKeeper session and nodes sharing it.
type Env struct {
	t       *testing.T
	backend string
	cfg     *configs.Config
	Session *cluster.Session
}

// Run runs the suite against backend; configure adjusts the configuration
// (addresses of the backend's own services, say).
func Run(t *testing.T, backend string, configure func(*configs.Config)) {
	t.Run("UploadThenFetchOnAnotherNode", func(t *testing.T) {
		e := NewEnv(t, backend, configure)
		a, b := e.Node(), e.Node()
		code, data := e.Publish(a, "roundtrip-1-1", 3<<20+17) // several chunks
		if err := b.Fetcher.Fetch(t.Context(), code.TopologyID, code.Digest); err != nil {
			t.Fatal(err)
		}
		e.expectHolds(b, code, data)
	})
	t.Run("NoReplicaMeansNotHeld", func(t *testing.T) {
		e := NewEnv(t, backend, configure)
		a, b := e.Node(), e.Node()
		code, _ := e.Publish(a, "orphan-1-1", 1000)
		e.Unregister(a, code)
		err := b.Fetcher.Fetch(t.Context(), code.TopologyID, code.Digest)
		if !errors.Is(err, codedistributor.ErrNotHeld) {
			t.Fatalf("fetch with no replica: %v, want ErrNotHeld", err)
		}
		e.expectNothing(b, code)
	})
	t.Run("CorruptSourceIsDiscardedAndAnotherUsed", func(t *testing.T) {
		e := NewEnv(t, backend, configure)
		a, b, c := e.Node(), e.Node(), e.Node()
		code, data := e.Publish(a, "corrupt-1-1", 200<<10)
		// a's copy is altered on disk; so far it is the only replica.
		corrupt(t, filepath.Join(a.Store.Dir(code.TopologyID), codedistributor.ArtifactFile))
		reported := a.Store.Reported()
		// A backend that reads a's disk must refuse its bytes, install
		// nothing, and a must notice (its CodeService or its backend); one
		// that stores the code elsewhere (HDFS) never reads them and
		// installs intact code.
		if err := b.Fetcher.Fetch(t.Context(), code.TopologyID, code.Digest); err != nil {
			if !errors.Is(err, codedistributor.ErrCorrupt) && !errors.Is(err, codedistributor.ErrNotHeld) {
				t.Fatalf("fetch from a corrupt only replica: %v, want ErrCorrupt or ErrNotHeld", err)
			}
			if !notify.Closed(reported) {
				t.Fatal("the node serving corrupt code did not notice")
			}
		}
		e.expectNothingOrIntact(b, code, data)
		// An intact replica appears: the next fetch uses it.
		e.Install(c, code, data)
		e.Register(c, code)
		if err := b.Fetcher.Fetch(t.Context(), code.TopologyID, code.Digest); err != nil {
			t.Fatal(err)
		}
		e.expectHolds(b, code, data)
	})
	t.Run("MetaMustMatchTheDigest", func(t *testing.T) {
		e := NewEnv(t, backend, configure)
		a, b := e.Node(), e.Node()
		code, _ := e.Publish(a, "digest-1-1", 1000)
		wrong := bytes.Repeat([]byte{7}, 32)
		// a advertises the wrong digest: no replica holds the wanted one.
		err := b.Fetcher.Fetch(t.Context(), code.TopologyID, wrong)
		if err == nil {
			t.Fatal("fetch with a digest no replica has succeeded")
		}
		e.expectNothing(b, code)
	})
	t.Run("RecoveredFromASupervisor", func(t *testing.T) {
		e := NewEnv(t, backend, configure)
		a, sup, b := e.Node(), e.Node(), e.Node()
		code, data := e.Publish(a, "recover-1-1", 300<<10)
		e.Install(sup, code, data) // a supervisor runs it
		e.RegisterSupervisor(sup, "sup-1")
		// Every nimbus copy is gone.
		e.Unregister(a, code)
		if err := a.Store.Remove(code.TopologyID); err != nil {
			t.Fatal(err)
		}
		if err := b.Fetcher.Fetch(t.Context(), code.TopologyID, code.Digest); !errors.Is(err, codedistributor.ErrNotHeld) {
			t.Fatalf("fetch from nimbuses with none holding the code: %v, want ErrNotHeld", err)
		}
		src, err := b.Fetcher.Recover(t.Context(), code.TopologyID, code.Digest)
		if err != nil {
			t.Fatal(err)
		}
		if src.Supervisor != "sup-1" || src.Addr != sup.Addr {
			t.Fatalf("recovered from %v, want supervisor sup-1 at %s", src, sup.Addr)
		}
		e.expectHolds(b, code, data)
	})
	t.Run("RecoveredPastStaleReplicas", func(t *testing.T) {
		// The only replica lost its copy (its disk was wiped) and has not
		// noticed: it is still registered, and answers that it holds
		// nothing. Recovery must not wait for it to notice.
		e := NewEnv(t, backend, configure)
		a, sup, b := e.Node(), e.Node(), e.Node()
		code, data := e.Publish(a, "stale-1-1", 300<<10)
		e.Install(sup, code, data)
		e.RegisterSupervisor(sup, "sup-1")
		if err := a.Store.Remove(code.TopologyID); err != nil {
			t.Fatal(err)
		}
		src, err := b.Fetcher.Recover(t.Context(), code.TopologyID, code.Digest)
		if err != nil {
			t.Fatal(err)
		}
		if src.Supervisor != "sup-1" {
			t.Fatalf("recovered from %v, want supervisor sup-1", src)
		}
		e.expectHolds(b, code, data)
	})
	t.Run("RecoveredFromAnySupervisor", func(t *testing.T) {
		// More supervisors than one recovery asks: the last look before a
		// LOST mark asks them all, and finds the one that holds the code.
		e := NewEnv(t, backend, configure)
		a, empty, holder, b := e.Node(), e.Node(), e.Node(), e.Node()
		code, data := e.Publish(a, "anywhere-1-1", 1000)
		e.Install(holder, code, data)
		for i := range 40 {
			e.RegisterSupervisor(empty, fmt.Sprintf("sup-%02d", i)) // they run other topologies
		}
		e.RegisterSupervisor(holder, "sup-holder")
		e.Unregister(a, code)
		if err := a.Store.Remove(code.TopologyID); err != nil {
			t.Fatal(err)
		}
		src, err := b.Fetcher.RecoverFromAny(t.Context(), code.TopologyID, code.Digest)
		if err != nil || src.Supervisor != "sup-holder" {
			t.Fatalf("RecoverFromAny: %v, %v; want the code from sup-holder", src, err)
		}
		e.expectHolds(b, code, data)
		if err := holder.Store.Remove(code.TopologyID); err != nil {
			t.Fatal(err)
		}
		if err := b.Store.Remove(code.TopologyID); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Fetcher.RecoverFromAny(t.Context(), code.TopologyID, code.Digest); !errors.Is(err, codedistributor.ErrHeldNowhere) {
			t.Fatalf("every supervisor answered it holds nothing: %v, want ErrHeldNowhere", err)
		}
		e.RegisterSupervisor(&Node{Addr: testcluster.ClosedAddr(t)}, "sup-silent")
		if _, err := b.Fetcher.RecoverFromAny(t.Context(), code.TopologyID, code.Digest); err == nil || errors.Is(err, codedistributor.ErrHeldNowhere) {
			t.Fatalf("one supervisor does not answer: %v, want an error that is not ErrHeldNowhere (it may hold the code)", err)
		}
	})
	t.Run("HeldNowhere", func(t *testing.T) {
		e := NewEnv(t, backend, configure)
		a, sup, b := e.Node(), e.Node(), e.Node()
		code, _ := e.Publish(a, "nowhere-1-1", 1000)
		e.RegisterSupervisor(sup, "sup-1") // runs other topologies
		e.Unregister(a, code)
		if err := a.Store.Remove(code.TopologyID); err != nil {
			t.Fatal(err)
		}
		_, err := b.Fetcher.Recover(t.Context(), code.TopologyID, code.Digest)
		if !errors.Is(err, codedistributor.ErrHeldNowhere) {
			t.Fatalf("recovery with no copy anywhere: %v, want ErrHeldNowhere", err)
		}
		e.expectNothing(b, code)
	})
	t.Run("CleanupIsIdempotent", func(t *testing.T) {
		e := NewEnv(t, backend, configure)
		a := e.Node()
		code, _ := e.Publish(a, "cleanup-1-1", 1000)
		for range 2 {
			if err := a.Dist.Cleanup(t.Context(), code.TopologyID); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// NewEnv starts a ZooKeeper and a session for nodes of backend, for a
// backend's own tests beyond the suite.
func NewEnv(t *testing.T, backend string, configure func(*configs.Config)) *Env {
	z := testcluster.StartZooKeeper(t)
	cfg := configs.Default()
	cfg.ZKHosts = []string{z.Addr()}
	cfg.CodeDistributorClass = backend
	if configure != nil {
		configure(cfg)
	}
	sess, err := cluster.Connect(t.Context(), cluster.SessionConfig{
		Servers: []string{z.Addr()}, SessionTimeout: 10 * time.Second, Root: "/storm",
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sess.Close)
	if err := sess.EnsurePath(sess.Paths().CodeDistributor()); err != nil {
		t.Fatal(err)
	}
	return &Env{t: t, backend: backend, cfg: cfg, Session: sess}
}

// Node starts a node: a store, its CodeService on loopback, a backend.
func (e *Env) Node() *Node {
	t := e.t
	store, err := codedistributor.OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n := &Node{Addr: ln.Addr().String(), Store: store}
	srv := grpc.NewServer()
	nimbusv1.RegisterCodeServiceServer(srv, codeservice.New(store, nil))
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	peers := codedistributor.NewPeers(nil)
	t.Cleanup(peers.Close)
	params := codedistributor.Params{Config: e.cfg, Session: e.Session, Peers: peers, Self: n.Addr, Store: store,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	if n.Dist, err = codedistributor.New(e.backend, params); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Dist.Close() })
	n.Fetcher = &codedistributor.Fetcher{Params: params, Dist: n.Dist, Store: store}
	return n
}

// Publish writes a bundle of size bytes on n, uploads it with n's backend,
// installs it in n's store and registers n as a replica, as a submitting
// leader does.
func (e *Env) Publish(n *Node, id string, size int) (codedistributor.Code, []byte) {
	data := make([]byte, size)
	if _, err := rand.Read(data); err != nil {
		e.t.Fatal(err)
	}
	return e.PublishData(n, id, data), data
}

// PublishData is Publish with the artifact's bytes given.
func (e *Env) PublishData(n *Node, id string, data []byte) codedistributor.Code {
	t := e.t
	code := e.Install(n, codedistributor.Code{TopologyID: id}, data)
	if _, err := e.Session.Conn().Create(e.Session.Paths().Distribution(id),
		cluster.Encode(&clusterv1.CodeDistribution{CodeMetaDigest: code.Digest}), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	e.Register(n, code)
	return code
}

// Install puts a bundle holding data into n's store through n's backend
// and returns it with its meta and digest. A code with a meta already
// (published elsewhere) is installed as is.
func (e *Env) Install(n *Node, code codedistributor.Code, data []byte) codedistributor.Code {
	t := e.t
	dir, err := n.Store.NewTemp()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{codedistributor.ArtifactFile: data, codedistributor.SpecFile: []byte("spec of " + code.TopologyID)}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	meta := code.Meta
	if meta == nil {
		meta = &clusterv1.CodeMeta{TopologyId: code.TopologyID}
		for _, name := range []string{codedistributor.ArtifactFile, codedistributor.SpecFile} {
			f, err := codedistributor.DescribeFile(dir, name)
			if err != nil {
				t.Fatal(err)
			}
			meta.Files = append(meta.Files, f)
		}
		if meta, err = n.Dist.Upload(t.Context(), dir, codedistributor.Code{TopologyID: code.TopologyID, Meta: meta}); err != nil {
			t.Fatal(err)
		}
	}
	digest, err := n.Store.Install(dir, code.TopologyID, meta)
	if err != nil {
		t.Fatal(err)
	}
	return codedistributor.Code{TopologyID: code.TopologyID, Meta: meta, Digest: digest}
}

// Register makes n a replica of code in ZooKeeper.
func (e *Env) Register(n *Node, code codedistributor.Code) {
	host, port, _ := net.SplitHostPort(n.Addr)
	p, _ := strconv.Atoi(port)
	info := &clusterv1.ReplicaInfo{Host: host, Port: int32(p), CodeMetaDigest: code.Digest}
	if _, err := e.Session.Conn().Create(e.Session.Paths().Replica(code.TopologyID, n.Addr), cluster.Encode(info), 0, zk.WorldACL(zk.PermAll)); err != nil {
		e.t.Fatal(err)
	}
}

// RegisterSupervisor registers n as supervisor id, serving its store on
// its CodeService, as a supervisor with supervisor.grpc.port does.
func (e *Env) RegisterSupervisor(n *Node, id string) {
	host, port, _ := net.SplitHostPort(n.Addr)
	p, _ := strconv.Atoi(port)
	info := &clusterv1.SupervisorInfo{SupervisorId: id, Host: host, CodePort: int32(p)}
	if err := e.Session.EnsurePath(e.Session.Paths().Supervisors()); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.Session.Conn().Create(e.Session.Paths().Supervisor(id), cluster.Encode(info), 0, zk.WorldACL(zk.PermAll)); err != nil {
		e.t.Fatal(err)
	}
}

// Unregister removes n's replica node.
func (e *Env) Unregister(n *Node, code codedistributor.Code) {
	if err := e.Session.Conn().Delete(e.Session.Paths().Replica(code.TopologyID, n.Addr), -1); err != nil {
		e.t.Fatal(err)
	}
}

func (e *Env) expectHolds(n *Node, code codedistributor.Code, data []byte) {
	e.t.Helper()
	if err := n.Store.Verify(code.TopologyID, code.Digest); err != nil {
		e.t.Fatalf("%s: %v", n.Addr, err)
	}
	got, err := os.ReadFile(filepath.Join(n.Store.Dir(code.TopologyID), codedistributor.ArtifactFile))
	if err != nil || !bytes.Equal(got, data) {
		e.t.Fatalf("%s: artifact differs from what was published (%v)", n.Addr, err)
	}
}

func (e *Env) expectNothing(n *Node, code codedistributor.Code) {
	e.t.Helper()
	if _, err := os.Stat(n.Store.Dir(code.TopologyID)); !errors.Is(err, os.ErrNotExist) {
		e.t.Fatalf("%s installed %s", n.Addr, code.TopologyID)
	}
}

// expectNothingOrIntact: whatever happened, nothing corrupt was installed.
func (e *Env) expectNothingOrIntact(n *Node, code codedistributor.Code, data []byte) {
	e.t.Helper()
	if _, err := os.Stat(n.Store.Dir(code.TopologyID)); err == nil {
		e.expectHolds(n, code, data)
	}
}

func corrupt(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
