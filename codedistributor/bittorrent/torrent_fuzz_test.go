package bittorrent

import (
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/codedistributor"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// Fuzz targets for the torrent in a code meta. Run one for longer with:
// go test ./codedistributor/bittorrent -run '^$' -fuzz '^FuzzTorrentOf$'

// writeBundle writes the files named and filled by nameBody (name,
// body, name, body...) into dir and describes them, in that order: a
// fuzz target's coverage must not depend on map order.
func writeBundle(tb testing.TB, dir string, nameBody ...[]byte) []*clusterv1.CodeFile {
	var files []*clusterv1.CodeFile
	for i := 0; i < len(nameBody); i += 2 {
		name := string(nameBody[i])
		if err := os.WriteFile(filepath.Join(dir, name), nameBody[i+1], 0o644); err != nil {
			tb.Fatal(err)
		}
		cf, err := codedistributor.DescribeFile(dir, name)
		if err != nil {
			tb.Fatal(err)
		}
		files = append(files, cf)
	}
	return files
}

// fuzzBundle returns the encoded file list (a CodeMeta with only its
// files) and the torrent of a bundle of the files in nameBody.
func fuzzBundle(f *testing.F, nameBody ...[]byte) (list, torrent []byte) {
	dir := f.TempDir()
	files := writeBundle(f, dir, nameBody...)
	torrent, err := makeTorrent(dir, "t-1-1", files, "http://tracker.example:6969/announce")
	if err != nil {
		f.Fatal(err)
	}
	return cluster.Encode(&clusterv1.CodeMeta{Files: files}), torrent
}

// FuzzTorrentOf gives torrentOf any file list (as DecodeMeta lets it
// through) and any torrent: it never panics, rejects with ErrCorrupt,
// and what it accepts describes exactly the meta's files, each as one
// plain name, and makes a torrent spec.
func FuzzTorrentOf(f *testing.F) {
	// Short names and sizes: a mutation or two reaches the edge cases.
	list, torrent := fuzzBundle(f, []byte("a"), []byte("1"), []byte("b"), []byte("2"))
	f.Add(list, torrent)
	f.Add(list, torrent[:len(torrent)-1])
	f.Add(list, []byte("d4:infod6:lengthi1e4:name1:a12:piece lengthi1e6:pieces0:ee"))
	f.Add([]byte{}, torrent)
	list, torrent = fuzzBundle(f, []byte(codedistributor.ArtifactFile), []byte("program"), []byte(codedistributor.SpecFile), nil)
	f.Add(list, torrent)

	f.Fuzz(func(t *testing.T, list, torrent []byte) {
		meta := &clusterv1.CodeMeta{}
		if proto.Unmarshal(list, meta) != nil {
			t.Skip()
		}
		meta.TopologyId, meta.Distributor, meta.BackendMeta = "t-1-1", Name, torrent
		data := cluster.Encode(meta)
		digest := sha256.Sum256(data)
		if _, err := codedistributor.DecodeMeta(data, digest[:]); err != nil {
			t.Skip() // never reaches torrentOf
		}
		mi, info, err := torrentOf(meta)
		if err != nil {
			if !errors.Is(err, codedistributor.ErrCorrupt) {
				t.Fatalf("torrentOf: %v, want ErrCorrupt", err)
			}
			return
		}
		if info.PieceLength <= 0 {
			t.Fatalf("accepted piece length %d", info.PieceLength)
		}
		want := map[string]int64{}
		for _, cf := range meta.GetFiles() {
			want[cf.GetName()] = cf.GetSize()
		}
		for _, tf := range info.UpvertedFiles() {
			path := tf.BestPath()
			if len(path) != 1 {
				t.Fatalf("accepted a torrent file at %q", path)
			}
			size, ok := want[path[0]]
			if !ok || size != tf.Length {
				t.Fatalf("accepted torrent file %q of %d bytes; the meta lists %v", path[0], tf.Length, want)
			}
			delete(want, path[0]) // a name listed twice is missing the second time
			const dir = "/store/code/t-1-1"
			if p := filepath.Join(dir, path[0]); filepath.Dir(p) != dir {
				t.Fatalf("torrent file %q lands at %s", path[0], p)
			}
		}
		if len(want) != 0 {
			t.Fatalf("accepted a torrent without the meta's files %v", want)
		}
		if _, err := spec(mi, fileStorage{}); err != nil && !errors.Is(err, codedistributor.ErrCorrupt) {
			t.Fatalf("spec: %v, want nil or ErrCorrupt", err)
		}
	})
}

// FuzzMakeTorrent: the torrent made of any bundle is one that torrentOf
// accepts for the bundle's meta, private, named and announced as asked.
func FuzzMakeTorrent(f *testing.F) {
	f.Add([]byte("program"), []byte{}, "http://tracker.example:6969/announce")
	f.Add([]byte{}, []byte{0}, "")
	f.Add([]byte("#!/bin/sh\n"), []byte("spec"), "udp://[::1]:6969")
	dir := f.TempDir() // one per worker process; rewritten by each input
	f.Fuzz(func(t *testing.T, artifact, specBytes []byte, announce string) {
		files := writeBundle(t, dir, []byte(codedistributor.ArtifactFile), artifact, []byte(codedistributor.SpecFile), specBytes)
		torrent, err := makeTorrent(dir, "t-1-1", files, announce)
		if len(artifact)+len(specBytes) == 0 {
			if err == nil {
				t.Fatal("a torrent of nothing was made")
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		meta := &clusterv1.CodeMeta{TopologyId: "t-1-1", Distributor: Name, Files: files, BackendMeta: torrent}
		mi, info, err := torrentOf(meta)
		if err != nil {
			t.Fatalf("torrentOf rejects the torrent makeTorrent made: %v", err)
		}
		if info.Private == nil || !*info.Private || info.Name != "t-1-1" || mi.Announce != announce {
			t.Fatalf("torrent: private %v, name %q, announce %q", info.Private, info.Name, mi.Announce)
		}
		if got, want := info.TotalLength(), int64(len(artifact)+len(specBytes)); got != want {
			t.Fatalf("torrent of %d bytes, want %d", got, want)
		}
		if _, err := spec(mi, fileStorage{dir: dir}); err != nil {
			t.Fatal(err)
		}
	})
}
