// Package hdfs is the code distributor that stores topology code in HDFS
// (hdfs.storm.dir/<topology-id>/). The uploading leader writes each file
// under a temporary name and renames it into place; every node downloads
// from HDFS, verifies each file against the meta's SHA-256 and installs the
// bundle in its own store, so nimbuses still hold the code locally (and
// register as replicas), which leadership requires.
//
// Blobs are kept apart, under blobstore.dir, one directory per version
// (blobstore.dir/<key>/<content SHA-256 in hex>/blob): an upload of a new
// version never touches the committed one, and the sweep of orphaned
// topology directories never sees a blob.
//
// Configuration: hdfs.namenode.addresses (host:port, one or two for an HA
// pair), hdfs.user (default: the OS user), hdfs.storm.dir, blobstore.dir.
// Kerberos (hdfs.kerberos.*) is not supported yet.
package hdfs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/user"
	"path"
	"path/filepath"
	"sync"
	"time"

	gohdfs "github.com/colinmarc/hdfs/v2"

	"github.com/nimbusha/nimbus/codedistributor"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// Name is the value of storm.codedistributor.class that selects it.
const Name = "hdfs"

// dialTimeout bounds connecting to a NameNode or DataNode, so a node that
// is down fails a call quickly instead of hanging it; ioTimeout bounds each
// read and write on a connection, so a node that accepts connections but
// never answers fails it too (the client has no per-call deadline).
const (
	dialTimeout = 5 * time.Second
	ioTimeout   = 30 * time.Second
)

// deadlineConn gives every read and write on a connection a deadline.
type deadlineConn struct{ net.Conn }

func (c deadlineConn) Read(b []byte) (int, error) {
	_ = c.Conn.SetReadDeadline(time.Now().Add(ioTimeout))
	return c.Conn.Read(b)
}

func (c deadlineConn) Write(b []byte) (int, error) {
	_ = c.Conn.SetWriteDeadline(time.Now().Add(ioTimeout))
	return c.Conn.Write(b)
}

func dial(ctx context.Context, network, addr string) (net.Conn, error) {
	conn, err := (&net.Dialer{Timeout: dialTimeout}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return deadlineConn{conn}, nil
}

func init() { codedistributor.Register(Name, New) }

type distributor struct {
	p       codedistributor.Params
	opts    gohdfs.ClientOptions
	dir     string // hdfs.storm.dir: topologies' code
	blobDir string // blobstore.dir: blobs' versions

	mu     sync.Mutex
	client *gohdfs.Client
}

// New builds the backend from hdfs.namenode.addresses and hdfs.user.
func New(p codedistributor.Params) (codedistributor.Distributor, error) {
	cfg := p.Config
	if len(cfg.HDFSNamenodeAddresses) == 0 {
		return nil, errors.New("hdfs: hdfs.namenode.addresses is empty")
	}
	name := cfg.HDFSUser
	if name == "" {
		u, err := user.Current()
		if err != nil {
			return nil, fmt.Errorf("hdfs: hdfs.user is empty and the OS user is unknown: %w", err)
		}
		name = u.Username
	}
	return &distributor{
		p:       p,
		dir:     cfg.HDFSStormDir,
		blobDir: cfg.BlobstoreDir,
		opts: gohdfs.ClientOptions{
			Addresses:        cfg.HDFSNamenodeAddresses,
			User:             name,
			NamenodeDialFunc: dial,
			DatanodeDialFunc: dial,
		},
	}, nil
}

// conn returns the client, connecting if needed.
func (d *distributor) conn() (*gohdfs.Client, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.client != nil {
		return d.client, nil
	}
	c, err := gohdfs.NewClient(d.opts)
	if err != nil {
		return nil, fmt.Errorf("hdfs: connect to %v: %w", d.opts.Addresses, err)
	}
	d.client = c
	return c, nil
}

// reset drops the client after err unless the NameNode answered (an HDFS
// error, or not found): after a transport failure the client keeps a
// broken connection, or a late reply that would be read as the next
// call's. Closing waits for calls in flight on the old client, so it
// happens outside the lock; new calls get a new client.
func (d *distributor) reset(c *gohdfs.Client, err error) {
	var answered gohdfs.Error
	if errors.As(err, &answered) || errors.Is(err, os.ErrNotExist) || errors.Is(err, codedistributor.ErrCorrupt) {
		return
	}
	d.mu.Lock()
	drop := d.client == c
	if drop {
		d.client = nil
	}
	d.mu.Unlock()
	if drop {
		go c.Close()
	}
}

func (d *distributor) topologyDir(id string) string { return path.Join(d.dir, id) }

// Upload copies the bundle's files to hdfs.storm.dir/<id>/, or a blob's
// to its version's directory (each written under a temporary name, then
// renamed), and records their paths in the meta. On failure it removes
// what it wrote, and only that.
func (d *distributor) Upload(ctx context.Context, dir string, code codedistributor.Code) (meta *clusterv1.CodeMeta, err error) {
	if code.Kind == codedistributor.KindBlob {
		return d.uploadBlob(ctx, dir, code)
	}
	c, err := d.conn()
	if err != nil {
		return nil, err
	}
	base := d.topologyDir(code.TopologyID)
	defer func() {
		if err != nil {
			d.reset(c, err)
			if c2, cerr := d.conn(); cerr == nil {
				_ = c2.RemoveAll(base) // nothing half-written stays
			}
			err = fmt.Errorf("hdfs: upload %s to %v: %w", code.TopologyID, d.opts.Addresses, err)
		}
	}()
	return d.write(ctx, c, dir, base, code)
}

// write copies the bundle's files in dir to base and returns their meta.
func (d *distributor) write(ctx context.Context, c *gohdfs.Client, dir, base string, code codedistributor.Code) (*clusterv1.CodeMeta, error) {
	if err := c.MkdirAll(base, 0o755); err != nil {
		return nil, err
	}
	meta := &clusterv1.CodeMeta{TopologyId: code.TopologyID, Distributor: Name}
	for _, f := range code.Meta.GetFiles() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		dst := path.Join(base, f.GetName())
		if err := put(ctx, c, filepath.Join(dir, f.GetName()), dst); err != nil {
			return nil, err
		}
		meta.Files = append(meta.Files, &clusterv1.CodeFile{Name: f.GetName(), Size: f.GetSize(), Sha256: f.GetSha256(), Location: dst})
	}
	return meta, nil
}

// put copies a local file to HDFS at dst, atomically.
func put(ctx context.Context, c *gohdfs.Client, src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := dst + ".uploading"
	_ = c.Remove(tmp)
	w, err := c.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, in); err != nil {
		w.Close()
		return err
	}
	if err := closeWritten(ctx, w); err != nil {
		return err
	}
	return c.Rename(tmp, dst)
}

// closeWait bounds waiting for the NameNode to learn of a file's last
// block.
const closeWait = 30 * time.Second

// closeWritten closes a written file. HDFS answers "replicating" until a
// DataNode has reported the last block; closing again is how a client
// waits for that.
func closeWritten(ctx context.Context, w *gohdfs.FileWriter) error {
	ctx, cancel := context.WithTimeout(ctx, closeWait)
	defer cancel()
	pause := 10 * time.Millisecond
	for {
		err := w.Close()
		if !errors.Is(err, gohdfs.ErrReplicating) {
			return err
		}
		// The NameNode offers no notification to wait on: ask again.
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (waited %v for the DataNode to report the last block)", err, closeWait)
		case <-time.After(pause):
		}
		pause = min(2*pause, 500*time.Millisecond)
	}
}

// Download reads each file of the meta from HDFS into dir, verifying it.
func (d *distributor) Download(ctx context.Context, dir string, code codedistributor.Code) error {
	c, err := d.conn()
	if err != nil {
		return err
	}
	for _, f := range code.Meta.GetFiles() {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := get(c, f, dir); err != nil {
			d.reset(c, err)
			return fmt.Errorf("hdfs: download %s/%s from %v: %w", code.TopologyID, f.GetName(), d.opts.Addresses, err)
		}
	}
	return nil
}

func get(c *gohdfs.Client, f *clusterv1.CodeFile, dir string) error {
	if f.GetLocation() == "" {
		return fmt.Errorf("%w: meta has no HDFS path for %s", codedistributor.ErrCorrupt, f.GetName())
	}
	r, err := c.Open(f.GetLocation())
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: %s is not in HDFS", codedistributor.ErrNotHeld, f.GetLocation())
	}
	if err != nil {
		return err
	}
	defer r.Close()
	out, err := codedistributor.CreateVerified(dir, f, "HDFS "+f.GetLocation())
	if err != nil {
		return err
	}
	defer out.Abort()
	if _, err := io.Copy(out, r); err != nil {
		return err
	}
	return out.Finish()
}

// Describe reports each file's HDFS path and replication factor.
func (d *distributor) Describe(_ context.Context, meta *clusterv1.CodeMeta) (map[string]string, error) {
	c, err := d.conn()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, f := range meta.GetFiles() {
		fi, err := c.Stat(f.GetLocation())
		if err != nil {
			d.reset(c, err)
			return nil, err
		}
		out[f.GetName()+".path"] = f.GetLocation()
		if st, ok := fi.Sys().(*gohdfs.FileStatus); ok {
			out[f.GetName()+".replication"] = fmt.Sprint(st.GetBlockReplication())
		}
	}
	return out, nil
}

// List returns the topology ids under hdfs.storm.dir: its directories,
// but the one holding blobstore.dir if an operator put it there (the
// leader removes what it lists and nothing refers to).
func (d *distributor) List(context.Context) ([]string, error) {
	c, err := d.conn()
	if err != nil {
		return nil, err
	}
	entries, err := c.ReadDir(d.dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		d.reset(c, err)
		return nil, err
	}
	ids := make([]string, 0, len(entries))
	for _, e := range entries {
		if e.IsDir() && !holds(path.Join(d.dir, e.Name()), d.blobDir) {
			ids = append(ids, e.Name())
		}
	}
	return ids, nil
}

// Cleanup removes hdfs.storm.dir/<id>/.
func (d *distributor) Cleanup(_ context.Context, topologyID string) error {
	c, err := d.conn()
	if err != nil {
		return err
	}
	if err := c.RemoveAll(d.topologyDir(topologyID)); err != nil && !errors.Is(err, os.ErrNotExist) {
		d.reset(c, err)
		return fmt.Errorf("hdfs: remove %s: %w", d.topologyDir(topologyID), err)
	}
	return nil
}

func (d *distributor) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.client != nil {
		err := d.client.Close()
		d.client = nil
		return err
	}
	return nil
}
