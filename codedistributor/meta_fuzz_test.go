package codedistributor_test

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/codedistributor"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// Fuzz targets for code metas. Run one for longer with:
// go test ./codedistributor -run '^$' -fuzz '^FuzzDecodeMeta$'

func sum(b []byte) []byte {
	s := sha256.Sum256(b)
	return s[:]
}

func fuzzMeta() *clusterv1.CodeMeta {
	return &clusterv1.CodeMeta{
		TopologyId:  "wordcount-1-1400000000",
		Distributor: "localfs",
		Files: []*clusterv1.CodeFile{
			{Name: codedistributor.ArtifactFile, Size: 3, Sha256: sum([]byte("jar"))},
			{Name: codedistributor.SpecFile, Size: 0, Sha256: sum(nil)},
		},
		BackendMeta: []byte("d8:announce0:e"),
	}
}

// checkSafeName fails t unless name is one plain entry of a directory.
func checkSafeName(t *testing.T, what, name string) {
	t.Helper()
	const dir = "/store/code/t-1-1"
	if name == "" || name == "." || name == ".." || filepath.Base(name) != name || !filepath.IsLocal(name) ||
		strings.Contains(name, "/") || filepath.Join(dir, name) != dir+"/"+name {
		t.Fatalf("accepted %s %q is not a safe single path element", what, name)
	}
}

// FuzzDecodeMeta: any bytes, with their digest or another, never panic;
// a rejection is ErrCorrupt; an accepted meta lists only safe, distinct
// file names and survives EncodeMeta and DecodeMeta.
func FuzzDecodeMeta(f *testing.F) {
	good := cluster.Encode(fuzzMeta())
	f.Add(good, true)
	f.Add(good, false)
	f.Add(good[:len(good)/2], true)
	f.Add([]byte{}, true)
	f.Add([]byte{0x1a, 0x02, 0x0a, 0x00}, true) // a file without a name
	// "artifact" lists it twice, which DecodeMeta accepted until the
	// fuzzers' checks showed it (found reading torrentOf, not by fuzzing).
	for _, name := range []string{"..", "a/b", "meta.pb", `a\b`, strings.Repeat("x", 256), "artifact"} {
		m := fuzzMeta()
		m.Files[1].Name = name
		f.Add(cluster.Encode(m), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, rightDigest bool) {
		digest := sum(data)
		if !rightDigest {
			digest[0] ^= 1
		}
		meta, err := codedistributor.DecodeMeta(data, digest)
		if err != nil {
			if meta != nil || !errors.Is(err, codedistributor.ErrCorrupt) {
				t.Fatalf("DecodeMeta = %v, %v; want nil and ErrCorrupt", meta, err)
			}
			if !rightDigest && !strings.Contains(err.Error(), codedistributor.Hex(digest)) {
				t.Fatalf("error %q does not name the digest wanted", err)
			}
			return
		}
		if !rightDigest {
			t.Fatal("a meta with the wrong digest was accepted")
		}
		checkMeta(t, meta)
	})
}

// FuzzMetaFileName: a file name in a meta is accepted only if it is a
// safe single path element, other than the meta's own file.
func FuzzMetaFileName(f *testing.F) {
	// testdata/fuzz holds "/", which was accepted (its own base name).
	for _, s := range []string{"artifact", "spec.pb", "", ".", "..", "...", "//", "a/", "/a", "a/b", `..\a`, "meta.pb", "a\x00b", strings.Repeat("é", 128)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		m := fuzzMeta()
		m.Files[0].Name = name
		data, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
		if err != nil {
			t.Skip() // invalid UTF-8: never in a meta's bytes
		}
		meta, err := codedistributor.DecodeMeta(data, sum(data))
		if err != nil {
			if !errors.Is(err, codedistributor.ErrCorrupt) || !strings.Contains(err.Error(), "file name") {
				t.Fatalf("rejecting %q: %v; want ErrCorrupt naming the file name", name, err)
			}
			return
		}
		if name == "meta.pb" {
			t.Fatal("a meta may list its own file")
		}
		checkMeta(t, meta)
	})
}

func checkMeta(t *testing.T, meta *clusterv1.CodeMeta) {
	t.Helper()
	seen := map[string]bool{}
	for _, f := range meta.GetFiles() {
		checkSafeName(t, "file name", f.GetName())
		if seen[f.GetName()] {
			t.Fatalf("accepted a meta listing %q twice", f.GetName())
		}
		seen[f.GetName()] = true
	}
	data, digest := codedistributor.EncodeMeta(meta)
	if !bytes.Equal(digest, sum(data)) {
		t.Fatal("EncodeMeta's digest is not the SHA-256 of its bytes")
	}
	back, err := codedistributor.DecodeMeta(data, digest)
	if err != nil || !proto.Equal(back, meta) {
		t.Fatalf("meta does not survive EncodeMeta and DecodeMeta: %v\n%v\n%v", err, meta, back)
	}
	if again, digest2 := codedistributor.EncodeMeta(back); !bytes.Equal(again, data) || !bytes.Equal(digest2, digest) {
		t.Fatal("EncodeMeta is not deterministic")
	}
}

// FuzzStoreDir: a topology id maps to one directory right below the
// store's code directory, or to a path that never exists; never to the
// code directory itself or anywhere else.
func FuzzStoreDir(f *testing.F) {
	// testdata/fuzz holds "/", which mapped to the code directory itself.
	for _, s := range []string{"wordcount-1-1400000000", "", ".", "..", "a/..", "../x", "a/b", "meta.pb"} {
		f.Add(s)
	}
	store, err := codedistributor.OpenStore(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	code := filepath.Join(store.Root(), "code")
	invalid := store.Dir("")
	f.Fuzz(func(t *testing.T, id string) {
		dir := store.Dir(id)
		if dir == invalid {
			return
		}
		if filepath.Dir(dir) != code || dir != code+"/"+id {
			t.Fatalf("Dir(%q) = %q, not an entry of %s", id, dir, code)
		}
		checkSafeName(t, "topology id", id)
	})
}
