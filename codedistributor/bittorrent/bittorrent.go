package bittorrent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anacrolix/torrent"
	pp "github.com/anacrolix/torrent/peer_protocol"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/nimbusha/nimbus/codedistributor"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// Name is the value of storm.codedistributor.class that selects it.
const Name = "bittorrent"

func init() { codedistributor.Register(Name, New) }

type distributor struct {
	p        codedistributor.Params
	client   *torrent.Client
	addr     string // host:port the other peers dial
	announce string // bittorrent.tracker.url; empty: no tracker

	ctx    context.Context // ends at Close; owns the seeding goroutines
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	torrents map[bundle]*active // what the client holds
	cleaned  map[bundle]bool    // cleaned up here: never seeded again
}

// bundle names what a torrent carries: a topology's code, or a blob's
// version (a blob's key may equal a topology id; its swarm is elsewhere).
type bundle struct {
	kind codedistributor.Kind
	id   string // a topology id, or a blob's key
}

// logAttr names the bundle in logs.
func (b bundle) logAttr() slog.Attr {
	if b.kind == codedistributor.KindBlob {
		return slog.String("blob", b.id)
	}
	return slog.String("topology", b.id)
}

func (b bundle) String() string { return b.kind.String() + " " + b.id }

// active is one torrent in the client, seeded or being downloaded.
type active struct {
	t      *torrent.Torrent
	leave  context.CancelFunc // ends its membership of the swarm
	seeded string             // fingerprint of the seeded bundle; "" while downloading
	others atomic.Int32       // a download's count of other swarm members
}

// New starts a BitTorrent client listening on bittorrent.port and seeding
// what the node's stores hold (its code, and its blobs if it keeps any).
func New(p codedistributor.Params) (codedistributor.Distributor, error) {
	if p.Store == nil {
		return nil, errors.New("bittorrent: the node's store is required (it is what the node seeds)")
	}
	cfg := p.Config
	host := cfg.LocalHostname
	if p.Self != "" {
		host, _, _ = net.SplitHostPort(p.Self)
	}
	dataDir := filepath.Join(p.Store.Root(), "bittorrent")
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, fmt.Errorf("bittorrent: %w", err)
	}
	cc := torrent.NewDefaultClientConfig()
	cc.DataDir = dataDir
	// Every torrent gets its own storage (the store, or a download's
	// directory); this default only keeps the client from opening a
	// database of its own.
	cc.DefaultStorage = fileStorage{dir: dataDir}
	cc.ListenPort = cfg.BittorrentPort
	// As nimbus.host: an IP literal binds that interface only.
	if net.ParseIP(host) != nil {
		cc.ListenHost = func(string) string { return host }
	}
	cc.Seed = true
	// A private swarm: peers come from ZooKeeper only.
	cc.NoDHT = true
	cc.DisablePEX = true
	cc.DisableTrackers = cfg.BittorrentTrackerURL == ""
	cc.NoDefaultPortForwarding = true
	cc.DisableWebtorrent = true
	cc.DisableWebseeds = true
	cc.DisableUTP = true // TCP is what a datacenter network carries best
	cc.DisableIPv6 = net.ParseIP(host).To4() != nil
	// Pieces are hash-checked; obfuscating the stream buys nothing here.
	cc.HeaderObfuscationPolicy = torrent.HeaderObfuscationPolicy{}
	cc.Extensions = pp.NewPeerExtensionBytes(pp.ExtensionBitLtep, pp.ExtensionBitFast) // no DHT
	// The library reports at warning level what is routine for it.
	cc.Slogger = slog.New(minLevel{p.Logger.With("library", "anacrolix/torrent").Handler(), slog.LevelError})
	if cfg.BittorrentMaxUpload > 0 {
		cc.UploadRateLimiter = limiter(cfg.BittorrentMaxUpload)
	}
	if cfg.BittorrentMaxDownload > 0 {
		cc.DownloadRateLimiter = limiter(cfg.BittorrentMaxDownload)
	}
	cl, err := torrent.NewClient(cc)
	if err != nil {
		return nil, fmt.Errorf("bittorrent: listen on bittorrent.port %d: %w", cfg.BittorrentPort, err)
	}
	d := &distributor{
		p:        p,
		client:   cl,
		addr:     net.JoinHostPort(host, strconv.Itoa(cl.LocalPort())),
		announce: cfg.BittorrentTrackerURL,
		torrents: map[bundle]*active{},
		cleaned:  map[bundle]bool{},
	}
	for _, dir := range []string{p.Session.Paths().Swarms(), p.Session.Paths().BlobSwarms()} {
		if err := p.Session.EnsurePath(dir); err != nil {
			cl.Close()
			return nil, fmt.Errorf("bittorrent: create %s: %w", dir, err)
		}
	}
	if p.Metrics != nil {
		sent := prometheus.NewCounterFunc(codedistributor.SentBytesOpts(Name), func() float64 {
			stats := cl.Stats()
			return float64(stats.BytesWrittenData.Int64())
		})
		if err := p.Metrics.Register(sent); err != nil {
			cl.Close()
			return nil, err
		}
	}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	d.wg.Go(d.seedStore)
	p.Logger.Info("bittorrent peer listening", "addr", d.addr)
	return d, nil
}

// swarms is the ZooKeeper directory of the swarms of kind's bundles.
func (d *distributor) swarms(kind codedistributor.Kind) string {
	if kind == codedistributor.KindBlob {
		return d.p.Session.Paths().BlobSwarms()
	}
	return d.p.Session.Paths().Swarms()
}

// Cleanup stops seeding the topology here, never seeds it again, and
// removes its swarm from ZooKeeper. The nodes' stores drop their copies on
// their own once the topology is gone.
func (d *distributor) Cleanup(_ context.Context, topologyID string) error {
	return d.remove(bundle{codedistributor.KindCode, topologyID})
}

// CleanupBlob removes blob key's swarm when the blob is deleted (keep
// nil), as Cleanup does a topology's. Its versions share the swarm and
// nothing else is stored outside the nodes: a node seeds the version its
// blob store holds, so an older one stops being seeded as soon as the
// stores install the new one.
func (d *distributor) CleanupBlob(_ context.Context, key string, keep *clusterv1.CodeMeta) error {
	if keep != nil {
		return nil
	}
	return d.remove(bundle{codedistributor.KindBlob, key})
}

// remove stops seeding b here for good and removes its swarm.
func (d *distributor) remove(b bundle) error {
	d.mu.Lock()
	d.cleaned[b] = true
	d.dropLocked(b)
	d.mu.Unlock()
	return d.p.Session.RemoveSwarm(d.swarms(b.kind), b.id)
}

// List returns the topologies with a swarm in ZooKeeper, so the leader can
// remove those nothing refers to.
func (d *distributor) List(context.Context) ([]string, error) {
	return d.p.Session.Read().SwarmIDs(d.swarms(codedistributor.KindCode))
}

// ListBlobs returns the blobs with a swarm in ZooKeeper; their versions
// share it, so none is listed.
func (d *distributor) ListBlobs(context.Context) (map[string][]string, error) {
	keys, err := d.p.Session.Read().SwarmIDs(d.swarms(codedistributor.KindBlob))
	if err != nil {
		return nil, err
	}
	out := make(map[string][]string, len(keys))
	for _, k := range keys {
		out[k] = nil
	}
	return out, nil
}

// Close stops seeding, leaves every swarm and closes the client.
func (d *distributor) Close() error {
	// Under mu, so no add can start a goroutine the Wait below misses.
	d.mu.Lock()
	d.cancel()
	d.mu.Unlock()
	d.wg.Wait()
	d.mu.Lock()
	for b := range d.torrents {
		d.dropLocked(b)
	}
	d.mu.Unlock()
	return errors.Join(d.client.Close()...)
}

// add puts a torrent for b into the client, replacing whatever the
// client held for it, and joins its swarm until the torrent is dropped. A
// download also adds the other members as peers.
func (d *distributor) add(b bundle, spec *torrent.TorrentSpec, seeded string) (*active, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ctx.Err() != nil {
		return nil, errors.New("bittorrent: closed")
	}
	if a := d.torrents[b]; a != nil {
		// A download is never replaced: the store is about to change.
		if a.seeded == "" {
			return nil, fmt.Errorf("bittorrent: %s is being downloaded already", b)
		}
		d.dropLocked(b)
	}
	t, _, err := d.client.AddTorrentSpec(spec)
	if err != nil {
		return nil, fmt.Errorf("bittorrent: add torrent of %s: %w", b, err)
	}
	ctx, leave := context.WithCancel(d.ctx)
	a := &active{t: t, leave: leave, seeded: seeded}
	d.torrents[b] = a
	d.wg.Go(func() { d.join(ctx, b, a) })
	return a, nil
}

// drop removes a's torrent if it is still the one held for b.
func (d *distributor) drop(b bundle, a *active) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.torrents[b] == a {
		d.dropLocked(b)
	}
}

func (d *distributor) dropLocked(b bundle) {
	a := d.torrents[b]
	if a == nil {
		return
	}
	delete(d.torrents, b)
	a.leave()
	a.t.Drop() // closes its files
}

// Upload makes a private torrent of the bundle in dir and opens its swarm;
// the node starts seeding once its store holds the bundle.
func (d *distributor) Upload(_ context.Context, dir string, code codedistributor.Code) (*clusterv1.CodeMeta, error) {
	start := time.Now()
	data, err := makeTorrent(dir, code.TopologyID, code.Meta.GetFiles(), d.announce)
	if err != nil {
		return nil, err
	}
	b := bundle{code.Kind, code.TopologyID}
	if err := d.p.Session.CreateSwarm(d.swarms(b.kind), b.id, d.p.Logger); err != nil {
		return nil, err
	}
	d.mu.Lock()
	delete(d.cleaned, b) // a blob's key is used again after a delete
	d.mu.Unlock()
	d.p.Logger.Debug("torrent made", b.logAttr(), "elapsed", time.Since(start).Round(time.Millisecond))
	return &clusterv1.CodeMeta{
		TopologyId:  code.TopologyID,
		Distributor: Name,
		Files:       code.Meta.GetFiles(),
		BackendMeta: data,
	}, nil
}

// limiter allows kibps KiB/s, in bursts of a request or more.
func limiter(kibps int) *rate.Limiter {
	return rate.NewLimiter(rate.Limit(kibps<<10), max(kibps<<10, 2*chunkSize))
}

// minLevel drops records below a level.
type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(as), h.min}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{h.Handler.WithGroup(name), h.min}
}
