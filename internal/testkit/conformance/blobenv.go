package conformance

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/nimbusha/nimbus/blobstore"
	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/codedistributor"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// The state a blob scenario starts from, set up as the leader and the
// nimbuses' Syncers do: a version uploaded through the backend and
// installed in the uploader's blob store, /blobstore/<key> holding its
// BlobMeta, and each nimbus holding a version registered under it.

// PublishBlob makes data the next version of blob key on n: uploaded with
// n's backend, installed in n's blob store, recorded in /blobstore/<key>,
// and n registered as holding it (in place of the version it held).
func (e *Env) PublishBlob(n *Node, key string, data []byte) codedistributor.Code {
	code := e.InstallBlob(n, key, data)
	e.SetBlobMeta(key, code)
	e.RegisterBlob(n, code)
	return code
}

// RandomBlob is size random bytes.
func (e *Env) RandomBlob(size int) []byte {
	data := make([]byte, size)
	if _, err := rand.Read(data); err != nil {
		e.t.Fatal(err)
	}
	return data
}

// InstallBlob uploads a version of blob key holding data with n's backend
// and installs it in n's blob store, over the version it held.
func (e *Env) InstallBlob(n *Node, key string, data []byte) codedistributor.Code {
	t := e.t
	dir, err := n.Blobs.NewTemp()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, blobstore.File), data, 0o644); err != nil {
		t.Fatal(err)
	}
	content, err := codedistributor.DescribeFile(dir, blobstore.File)
	if err != nil {
		t.Fatal(err)
	}
	code := codedistributor.Code{Kind: codedistributor.KindBlob, TopologyID: key, Meta: blobstore.Meta(key, content)}
	if code.Meta, err = n.Dist.Upload(t.Context(), dir, code); err != nil {
		t.Fatal(err)
	}
	if code.Digest, err = n.Blobs.Install(dir, key, code.Meta); err != nil {
		t.Fatal(err)
	}
	return code
}

// SetBlobMeta records code as blob key's current version in
// /blobstore/<key>, creating the node for a first version.
func (e *Env) SetBlobMeta(key string, code codedistributor.Code) {
	t := e.t
	content := code.Meta.GetFiles()[0]
	prev, _, err := e.Session.Read().Blob(key)
	if err != nil && !errors.Is(err, cluster.ErrNoNode) {
		t.Fatal(err)
	}
	meta := blobstore.NewVersion(prev, code.Digest, content, 1, time.Now())
	path := e.Session.Paths().Blob(key)
	if prev == nil {
		meta.ReplicationFactor = 1
		_, err = e.Session.Conn().Create(path, cluster.Encode(meta), 0, e.Session.ACL())
	} else {
		_, err = e.Session.Conn().Set(path, cluster.Encode(meta), cluster.AnyVersion)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// RegisterBlob registers n as a nimbus holding code's version of its blob:
// the ephemeral /blobstore/<key>/<host:port> a nimbus keeps, replacing the
// registration n had for the blob. It returns once the node exists.
func (e *Env) RegisterBlob(n *Node, code codedistributor.Code) {
	t := e.t
	host, port, _ := net.SplitHostPort(n.Addr)
	p, _ := strconv.Atoi(port)
	info := &clusterv1.ReplicaInfo{Host: host, Port: int32(p), CodeMetaDigest: code.Digest}
	path := e.Session.Paths().BlobReplica(code.TopologyID, n.Addr)
	e.blobs.stop(path)
	ready := make(chan struct{})
	var once sync.Once
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		node := cluster.EphemeralNode{Path: path, Data: cluster.Encode(info), Ready: func() { once.Do(func() { close(ready) }) }}
		node.Keep(ctx, e.Session, slog.New(slog.DiscardHandler))
	}()
	e.blobs.hold(path, func() { cancel(); <-done })
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
		t.Fatalf("the replica node %s was not created within 10s", path)
	}
}

// UnregisterBlob removes n's registration as a replica of blob key.
func (e *Env) UnregisterBlob(n *Node, key string) {
	e.blobs.stop(e.Session.Paths().BlobReplica(key, n.Addr))
}

// blobReplicas are an Env's registrations of blob replicas, each an
// ephemeral node kept by a goroutine of its own until it is stopped.
type blobReplicas struct {
	mu   sync.Mutex
	held map[string]func() // by path: ends the keeping, the node deleted
}

func (r *blobReplicas) hold(path string, stop func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held == nil {
		r.held = map[string]func(){}
	}
	r.held[path] = stop
}

// stop ends the registration at path, if there is one, and returns once
// its node is deleted.
func (r *blobReplicas) stop(path string) {
	r.mu.Lock()
	stop := r.held[path]
	delete(r.held, path)
	r.mu.Unlock()
	if stop != nil {
		stop()
	}
}

func (r *blobReplicas) stopAll() {
	r.mu.Lock()
	paths := make([]string, 0, len(r.held))
	for p := range r.held {
		paths = append(paths, p)
	}
	r.mu.Unlock()
	for _, p := range paths {
		r.stop(p)
	}
}
