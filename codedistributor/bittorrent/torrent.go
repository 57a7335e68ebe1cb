package bittorrent

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	g "github.com/anacrolix/generics"
	"github.com/anacrolix/torrent"
	"github.com/anacrolix/torrent/bencode"
	"github.com/anacrolix/torrent/metainfo"
	"github.com/anacrolix/torrent/storage"

	"github.com/nimbusha/nimbus/codedistributor"
	"github.com/nimbusha/nimbus/internal/version"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// Files are written in place: part files would have the client rename
// files inside the store.
var noPartFiles = g.Some(false)

// makeTorrent returns the .torrent of the files of a bundle in dir: one
// private torrent named after the topology, one file per bundle file, and
// the tracker's announce URL if there is one.
func makeTorrent(dir, topologyID string, files []*clusterv1.CodeFile, announce string) ([]byte, error) {
	private := true
	info := metainfo.Info{Name: topologyID, Private: &private}
	var total int64
	for _, f := range files {
		info.Files = append(info.Files, metainfo.FileInfo{Path: []string{f.GetName()}, Length: f.GetSize()})
		total += f.GetSize()
	}
	if total == 0 {
		return nil, fmt.Errorf("bittorrent: the code of %s is empty", topologyID)
	}
	slices.SortFunc(info.Files, func(a, b metainfo.FileInfo) int { return strings.Compare(a.Path[0], b.Path[0]) })
	// 1,024 to 2,048 pieces: small enough to spread over many peers early,
	// few enough that the piece hashes stay a small part of the meta.
	info.PieceLength = metainfo.ChoosePieceLength(total)
	if err := info.GeneratePieces(func(fi metainfo.FileInfo) (io.ReadCloser, error) {
		return os.Open(filepath.Join(dir, fi.Path[0]))
	}); err != nil {
		return nil, fmt.Errorf("bittorrent: hash the pieces of %s: %w", topologyID, err)
	}
	infoBytes, err := bencode.Marshal(info)
	if err != nil {
		return nil, err
	}
	mi := metainfo.MetaInfo{
		InfoBytes:    infoBytes,
		Announce:     announce,
		CreatedBy:    "nimbus-ha " + version.Version,
		CreationDate: time.Now().Unix(),
	}
	var buf bytes.Buffer
	if err := mi.Write(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// torrentOf parses the torrent in a meta and checks that it describes
// exactly the meta's files, which the meta's digest vouches for.
func torrentOf(meta *clusterv1.CodeMeta) (*metainfo.MetaInfo, *metainfo.Info, error) {
	id := meta.GetTopologyId()
	if meta.GetDistributor() != Name {
		return nil, nil, fmt.Errorf("bittorrent: the code of %s was stored by %q; every node must use the same storm.codedistributor.class",
			id, meta.GetDistributor())
	}
	mi, err := metainfo.Load(bytes.NewReader(meta.GetBackendMeta()))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: torrent of %s: %v", codedistributor.ErrCorrupt, id, err)
	}
	info, err := mi.UnmarshalInfo()
	if err != nil {
		return nil, nil, fmt.Errorf("%w: torrent of %s: %v", codedistributor.ErrCorrupt, id, err)
	}
	want := map[string]int64{}
	for _, f := range meta.GetFiles() {
		want[f.GetName()] = f.GetSize()
	}
	files := info.UpvertedFiles()
	ok := len(files) == len(want) && info.PieceLength > 0
	for _, f := range files {
		path := f.BestPath()
		if len(path) != 1 {
			ok = false
			break
		}
		size, listed := want[path[0]]
		ok = ok && listed && size == f.Length
	}
	if !ok {
		return nil, nil, fmt.Errorf("%w: the torrent of %s does not describe the files of its meta", codedistributor.ErrCorrupt, id)
	}
	return mi, &info, nil
}

// newStorage keeps a torrent's files directly in dir, under their names.
func newStorage(dir string, pc storage.PieceCompletion) storage.ClientImplCloser {
	return storage.NewFileOpts(storage.NewFileClientOpts{
		ClientBaseDir:   dir,
		FilePathMaker:   func(o storage.FilePathMakerOpts) string { return filepath.Join(o.File.BestPath()...) },
		PieceCompletion: pc,
		UsePartFiles:    noPartFiles,
	})
}

// spec is how a torrent is added to the client.
func spec(mi *metainfo.MetaInfo, st storage.ClientImplCloser, seed bool) (*torrent.TorrentSpec, error) {
	s, err := torrent.TorrentSpecFromMetaInfoErr(mi)
	if err != nil {
		return nil, fmt.Errorf("%w: torrent: %v", codedistributor.ErrCorrupt, err)
	}
	s.Storage = st
	// A seed reads the store and never writes it.
	s.DisallowDataDownload = seed
	return s, nil
}
