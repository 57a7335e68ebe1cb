package conformance

import (
	"crypto/rand"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/codedistributor"
	"github.com/nimbusha/nimbus/codeservice"
	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// Node is one simulated nimbus: a store of code and one of blobs, both
// served by a CodeService, and the backend under test, which carries both
// kinds.
type Node struct {
	Addr        string
	Store       *codedistributor.Store
	Blobs       *codedistributor.Store
	Dist        codedistributor.Distributor
	Fetcher     *codedistributor.Fetcher // into Store
	BlobFetcher *codedistributor.Fetcher // into Blobs
}

// Env is a ZooKeeper session and nodes sharing it.
type Env struct {
	t       *testing.T
	backend string
	cfg     *configs.Config
	Session *cluster.Session
	blobs   blobReplicas
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
	for _, dir := range []string{sess.Paths().CodeDistributor(), sess.Paths().BlobStore()} {
		if err := sess.EnsurePath(dir); err != nil {
			t.Fatal(err)
		}
	}
	e := &Env{t: t, backend: backend, cfg: cfg, Session: sess}
	t.Cleanup(e.blobs.stopAll)
	return e
}

// Node starts a node: a store of code and one of blobs, their
// CodeService on loopback, a backend.
func (e *Env) Node() *Node {
	t := e.t
	store, err := codedistributor.OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	blobs, err := codedistributor.OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n := &Node{Addr: ln.Addr().String(), Store: store, Blobs: blobs}
	srv := grpc.NewServer()
	nimbusv1.RegisterCodeServiceServer(srv, codeservice.New(store, nil, codeservice.WithBlobs(blobs)))
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	peers := codedistributor.NewPeers(nil)
	t.Cleanup(peers.Close)
	params := codedistributor.Params{Config: e.cfg, Session: e.Session, Peers: peers, Self: n.Addr, Store: store, Blobs: blobs,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	if n.Dist, err = codedistributor.New(e.backend, params); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Dist.Close() })
	n.Fetcher = &codedistributor.Fetcher{Params: params, Dist: n.Dist, Store: store}
	n.BlobFetcher = &codedistributor.Fetcher{Params: params, Dist: n.Dist, Store: blobs, Kind: codedistributor.KindBlob}
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
		cluster.Encode(&clusterv1.CodeDistribution{CodeMetaDigest: code.Digest}), 0, e.Session.ACL()); err != nil {
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
	if _, err := e.Session.Conn().Create(e.Session.Paths().Replica(code.TopologyID, n.Addr), cluster.Encode(info), 0, e.Session.ACL()); err != nil {
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
	if _, err := e.Session.Conn().Create(e.Session.Paths().Supervisor(id), cluster.Encode(info), 0, e.Session.ACL()); err != nil {
		e.t.Fatal(err)
	}
}

// Unregister removes n's replica node.
func (e *Env) Unregister(n *Node, code codedistributor.Code) {
	if err := e.Session.Conn().Delete(e.Session.Paths().Replica(code.TopologyID, n.Addr), -1); err != nil {
		e.t.Fatal(err)
	}
}
