package bittorrent

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/codedistributor"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

func TestTorrentDescribesExactlyTheMetasFiles(t *testing.T) {
	dir := t.TempDir()
	var files []*clusterv1.CodeFile
	for name, size := range map[string]int{"artifact": 300 << 10, "spec.pb": 17} {
		if err := os.WriteFile(filepath.Join(dir, name), make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := codedistributor.DescribeFile(dir, name)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	data, err := makeTorrent(dir, "t-1-1", files, "http://tracker.example:6969/announce")
	if err != nil {
		t.Fatal(err)
	}
	meta := &clusterv1.CodeMeta{TopologyId: "t-1-1", Distributor: Name, Files: files, BackendMeta: data}
	mi, info, err := torrentOf(meta)
	if err != nil {
		t.Fatal(err)
	}
	if info.Private == nil || !*info.Private || info.Name != "t-1-1" || mi.Announce != "http://tracker.example:6969/announce" {
		t.Fatalf("torrent: private %v, name %q, announce %q", info.Private, info.Name, mi.Announce)
	}

	for name, alter := range map[string]func(m *clusterv1.CodeMeta){
		"a size differs":    func(m *clusterv1.CodeMeta) { m.Files[0].Size++ },
		"a file is missing": func(m *clusterv1.CodeMeta) { m.Files = m.Files[:1] },
		"a name differs":    func(m *clusterv1.CodeMeta) { m.Files[1].Name = "other" },
		"not a torrent":     func(m *clusterv1.CodeMeta) { m.BackendMeta = []byte("d4:infoi1ee") },
		"garbage":           func(m *clusterv1.CodeMeta) { m.BackendMeta = []byte{0xff, 0} },
	} {
		m := proto.Clone(meta).(*clusterv1.CodeMeta)
		alter(m)
		if _, _, err := torrentOf(m); !errors.Is(err, codedistributor.ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
	other := proto.Clone(meta).(*clusterv1.CodeMeta)
	other.Distributor = "localfs"
	if _, _, err := torrentOf(other); err == nil || !strings.Contains(err.Error(), "storm.codedistributor.class") {
		t.Errorf("meta of another backend: %v, want an error naming storm.codedistributor.class", err)
	}
	if _, err := makeTorrent(dir, "t-1-1", nil, ""); err == nil {
		t.Error("a torrent of nothing was made")
	}
}
