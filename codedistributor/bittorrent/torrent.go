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

	"github.com/anacrolix/torrent"
	"github.com/anacrolix/torrent/bencode"
	"github.com/anacrolix/torrent/metainfo"
	"github.com/anacrolix/torrent/storage"

	"github.com/nimbusha/nimbus/codedistributor"
	"github.com/nimbusha/nimbus/internal/version"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

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
	info.PieceLength = pieceLength(total)
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

// chunkSize is what a peer asks for at a time: 4x the usual 16 KiB, as
// the per-request work is most of what moving a piece costs. Every node
// of the cluster serves requests this big; ordinary clients that join
// through a tracker may not, and then serve nobody but themselves.
const chunkSize = 64 << 10

// pieceLength is a power of two from 256 KiB that cuts total into at
// most 1,024 pieces: enough to spread a big artifact over many peers at
// once, few enough that the work per piece (hashing, requests, the meta's
// piece hashes) stays small.
func pieceLength(total int64) int64 {
	n := int64(256 << 10)
	for total > 1024*n {
		n <<= 1
	}
	return n
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
		delete(want, path[0]) // a file listed twice leaves another one out
	}
	if !ok {
		return nil, nil, fmt.Errorf("%w: the torrent of %s does not describe the files of its meta", codedistributor.ErrCorrupt, id)
	}
	return mi, &info, nil
}

// spec is how a torrent is added to the client.
func spec(mi *metainfo.MetaInfo, st storage.ClientImpl) (*torrent.TorrentSpec, error) {
	s, err := torrent.TorrentSpecFromMetaInfoErr(mi)
	if err != nil {
		return nil, fmt.Errorf("%w: torrent: %v", codedistributor.ErrCorrupt, err)
	}
	s.Storage = st
	s.ChunkSize = chunkSize
	return s, nil
}
