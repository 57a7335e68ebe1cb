package bittorrent_test

import (
	"bytes"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/anacrolix/torrent"
	"github.com/anacrolix/torrent/bencode"
	"github.com/anacrolix/torrent/metainfo"

	"github.com/nimbusha/nimbus/codedistributor"
	"github.com/nimbusha/nimbus/codedistributor/bittorrent"
	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/testkit/conformance"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
)

// An ordinary BitTorrent client that knows nothing of ZooKeeper joins the
// swarm through bittorrent.tracker.url and downloads the code.
func TestOrdinaryClientJoinsThroughTracker(t *testing.T) {
	tr := newTracker()
	srv := httptest.NewServer(tr)
	t.Cleanup(srv.Close)
	e := conformance.NewEnv(t, bittorrent.Name, func(cfg *configs.Config) {
		cfg.BittorrentPort = 0
		cfg.BittorrentTrackerURL = srv.URL + "/announce"
	})
	code, data := e.Publish(e.Node(), "tracked-1-1", 2<<20+5)

	mi, err := metainfo.Load(bytes.NewReader(code.Meta.GetBackendMeta()))
	if err != nil {
		t.Fatal(err)
	}
	if mi.Announce != srv.URL+"/announce" {
		t.Fatalf("announce URL in the metainfo: %q", mi.Announce)
	}
	// The node announces itself once it seeds.
	testcluster.WaitFor(t, 10*time.Second, "the seeding node announced to the tracker", func() error {
		if tr.peers(mi.HashInfoBytes()) == 0 {
			return errors.New("no announce yet")
		}
		return nil
	})

	cc := torrent.NewDefaultClientConfig()
	cc.DataDir = t.TempDir()
	cc.ListenHost = func(string) string { return "127.0.0.1" }
	cc.ListenPort = 0
	cc.NoDHT = true
	cc.DisableIPv6 = true
	cl, err := torrent.NewClient(cc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	tor, err := cl.AddTorrent(mi)
	if err != nil {
		t.Fatal(err)
	}
	tor.DownloadAll()
	select {
	case <-tor.Complete().On():
	case <-time.After(60 * time.Second):
		t.Fatalf("ordinary client has %d of %d bytes after 60 s", tor.BytesCompleted(), tor.Length())
	}
	got, err := os.ReadFile(filepath.Join(cc.DataDir, "tracked-1-1", codedistributor.ArtifactFile))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("artifact from the swarm differs (%v)", err)
	}
}

// tracker is a minimal HTTP BitTorrent tracker (BEP 3, compact peers).
type tracker struct {
	mu    sync.Mutex
	swarm map[metainfo.Hash]map[string]bool // host:port of announcing peers
}

func newTracker() *tracker { return &tracker{swarm: map[metainfo.Hash]map[string]bool{}} }

func (tr *tracker) peers(ih metainfo.Hash) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return len(tr.swarm[ih])
}

func (tr *tracker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var ih metainfo.Hash
	if len(q.Get("info_hash")) != len(ih) {
		http.Error(w, "bad info_hash", http.StatusBadRequest)
		return
	}
	copy(ih[:], q.Get("info_hash"))
	host, _, _ := net.SplitHostPort(r.RemoteAddr)
	self := net.JoinHostPort(host, q.Get("port"))
	tr.mu.Lock()
	if tr.swarm[ih] == nil {
		tr.swarm[ih] = map[string]bool{}
	}
	tr.swarm[ih][self] = true
	var compact []byte
	for addr := range tr.swarm[ih] {
		if addr == self {
			continue
		}
		h, p, _ := net.SplitHostPort(addr)
		port, _ := strconv.Atoi(p)
		compact = append(compact, net.ParseIP(h).To4()...)
		compact = append(compact, byte(port>>8), byte(port))
	}
	tr.mu.Unlock()
	bencode.NewEncoder(w).Encode(map[string]any{"interval": 1, "peers": string(compact)})
}
