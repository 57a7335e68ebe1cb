package codedistributor

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/configs"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// Kind is what a bundle holds: a topology's code, or a version of a blob
// (docs/ARCHITECTURE.md section 24). A node keeps each kind in a Store of
// its own, and backends keep them apart (replicas, HDFS directories,
// swarms): a blob's key may look like a topology id.
type Kind uint8

const (
	// KindCode is a topology's code; the bundle's id is the topology id.
	KindCode Kind = iota
	// KindBlob is a blob's version; the bundle's id is the blob's key.
	KindBlob
)

// String names the kind in logs.
func (k Kind) String() string {
	if k == KindBlob {
		return "blob"
	}
	return "code"
}

// Code names a bundle (a topology's code, or a blob's version) and its
// meta.
type Code struct {
	Kind       Kind
	TopologyID string // the bundle's id: a topology id, or a blob's key
	Meta       *clusterv1.CodeMeta
	Digest     []byte // the meta's digest; set for downloads
	// Sources, when not nil, are the CodeServices (host:port) a backend
	// that downloads from nodes uses instead of the nimbus replicas: the
	// supervisor a recovery found. Backends that store code elsewhere
	// (hdfs) or find their peers themselves (bittorrent) ignore it.
	Sources []string
}

// Distributor stores a bundle where other nodes can fetch it, and fetches
// bundles. Every node keeps a verified local copy in its Store whatever
// the backend; the backend only moves bytes.
type Distributor interface {
	// Upload makes the bundle in dir available to other nodes and returns
	// its meta, completed with what the backend needs to find it again
	// (locations, backend meta). code.Meta already lists the files with
	// sizes and SHA-256s.
	Upload(ctx context.Context, dir string, code Code) (*clusterv1.CodeMeta, error)
	// Download writes the files of code.Meta into dir, each verified
	// against its SHA-256; a source that sends bad bytes is logged and the
	// next one is tried. It returns an error wrapping ErrCorrupt or
	// ErrNotHeld when no source gives good bytes.
	Download(ctx context.Context, dir string, code Code) error
	// Cleanup removes what Upload stored outside the nodes' stores for a
	// topology's code.
	Cleanup(ctx context.Context, topologyID string) error
	// CleanupBlob removes what Upload stored outside the nodes' stores
	// for blob key: every version but the one keep describes, or all of
	// it when keep is nil (the blob was deleted). Nothing of a topology
	// whose id equals key is touched. Removing what is gone already
	// succeeds.
	CleanupBlob(ctx context.Context, key string, keep *clusterv1.CodeMeta) error
	// Close releases connections.
	Close() error
}

// Describer is implemented by backends that store code outside the nodes
// and can say how (HDFS: each file's path and replication factor).
type Describer interface {
	Describe(ctx context.Context, meta *clusterv1.CodeMeta) (map[string]string, error)
}

// Lister is implemented by backends that store code outside the nodes: it
// lists the topology ids they hold, so the leader can remove what a failed
// upload or cleanup left behind.
type Lister interface {
	List(ctx context.Context) ([]string, error)
}

// BlobLister is implemented by backends that store blobs outside the
// nodes: it lists, by key, the blobs they hold something of and the
// versions they keep apart (the content's SHA-256 in hex; none for a
// backend whose versions share one place, such as a swarm), so the leader
// can remove what a failed upload or cleanup left behind.
type BlobLister interface {
	ListBlobs(ctx context.Context) (map[string][]string, error)
}

// Params is what a backend gets to build itself (Storm's prepare(conf)).
type Params struct {
	Config  *configs.Config
	Session *cluster.Session
	Peers   *Peers
	// Self is this node's CodeService address (host:port); downloads skip
	// it. Empty on nodes that serve no code.
	Self string
	// Store is this node's verified copy. Backends in which nodes serve
	// each other (bittorrent) serve what it holds, and report a copy they
	// find corrupt to it (Store.ReportCorrupt).
	Store *Store
	// Blobs is this node's store of blobs, kept apart from Store; nil on
	// a node that holds none. Backends that serve Store serve it too.
	Blobs *Store
	// Metrics, if set, is where the backend registers its metrics.
	Metrics prometheus.Registerer
	Logger  *slog.Logger
}

// SentBytesOpts describes the counter of code bytes a node sent to other
// nodes over transport; every transport uses it, so the series add up.
func SentBytesOpts(transport string) prometheus.CounterOpts {
	return prometheus.CounterOpts{
		Name:        "nimbus_code_sent_bytes_total",
		Help:        "Bytes of topology code this node sent to other nodes, by transport.",
		ConstLabels: prometheus.Labels{"transport": transport},
	}
}

// Factory builds a backend.
type Factory func(Params) (Distributor, error)

var (
	registryMu sync.Mutex
	registry   = map[string]Factory{}
)

// Register makes a backend available under name (the value of
// storm.codedistributor.class). It panics on a duplicate: two backends
// claiming one name is a programming error.
func Register(name string, f Factory) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[name]; dup {
		panic("codedistributor: backend registered twice: " + name)
	}
	registry[name] = f
}

// Names lists the registered backends.
func Names() []string {
	registryMu.Lock()
	defer registryMu.Unlock()
	return slices.Sorted(maps.Keys(registry))
}

// CheckClass fails, naming the key and the backends there are, unless a
// backend is registered as name (storm.codedistributor.class).
func CheckClass(name string) error {
	registryMu.Lock()
	_, ok := registry[name]
	registryMu.Unlock()
	if !ok {
		return fmt.Errorf("codedistributor: %s: %q is not one of %s", configs.KeyCodeDistributorClass, name, strings.Join(Names(), ", "))
	}
	return nil
}

// New builds the backend called name.
func New(name string, p Params) (Distributor, error) {
	if err := CheckClass(name); err != nil {
		return nil, err
	}
	registryMu.Lock()
	f := registry[name]
	registryMu.Unlock()
	if p.Logger == nil {
		p.Logger = slog.New(slog.DiscardHandler)
	}
	p.Logger = p.Logger.With("component", "codedistributor", "backend", name)
	return f(p)
}
