package snapshot

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protodelim"

	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// sample writes a snapshot of two nodes and a 2.5-chunk file.
func sample(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	w := NewWriter(&b, &clusterv1.SnapshotHeader{Release: "0.2", ClusterId: "c1", Root: "/storm"})
	if err := w.Node("storms/wc-1-1", []byte("base")); err != nil {
		t.Fatal(err)
	}
	if err := w.Node("assignments/wc-1-1", nil); err != nil {
		t.Fatal(err)
	}
	if err := w.File("wc-1-1", "artifact", bytes.NewReader(bytes.Repeat([]byte("x"), chunkSize*5/2))); err != nil {
		t.Fatal(err)
	}
	if err := w.File("wc-1-1", "spec.pb", bytes.NewReader(nil)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestRoundTrip(t *testing.T) {
	data := sample(t)
	c, err := Verify(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if c.Header.GetClusterId() != "c1" || c.Header.GetFormat() != Format || c.Nodes != 2 || c.Files != 4 || c.Bytes != int64(len(data)) {
		t.Fatalf("contents %+v", c)
	}
	var artifact []byte
	var nodes []string
	err = Read(bytes.NewReader(data), func(r *clusterv1.SnapshotRecord) error {
		if n := r.GetNode(); n != nil {
			nodes = append(nodes, n.GetPath())
		}
		if f := r.GetFile(); f.GetName() == "artifact" {
			if f.GetOffset() != int64(len(artifact)) {
				t.Fatalf("chunk at %d after %d bytes", f.GetOffset(), len(artifact))
			}
			artifact = append(artifact, f.GetData()...)
		}
		return nil
	})
	if err != nil || len(artifact) != chunkSize*5/2 || strings.Join(nodes, ",") != "storms/wc-1-1,assignments/wc-1-1" {
		t.Fatalf("read: %v, %d artifact bytes, nodes %v", err, len(artifact), nodes)
	}
}

// Every damage is refused whole, saying what is wrong.
func TestDamageIsRefused(t *testing.T) {
	data := sample(t)
	altered := bytes.Clone(data)
	altered[len(altered)/2] ^= 1
	newer := func() []byte { // a header of a format past this build's
		rec := &clusterv1.SnapshotRecord{Record: &clusterv1.SnapshotRecord_Header{Header: &clusterv1.SnapshotHeader{Format: Format + 1, Release: "9.9"}}}
		var out bytes.Buffer
		_, _ = protodelim.MarshalTo(&out, rec)
		return out.Bytes()
	}()
	headless := func() []byte {
		var b bytes.Buffer
		_, _ = protodelim.MarshalTo(&b, &clusterv1.SnapshotRecord{Record: &clusterv1.SnapshotRecord_Node{Node: &clusterv1.SnapshotNode{Path: "x"}}})
		return b.Bytes()
	}()
	for _, tc := range []struct {
		name, says string
		data       []byte
	}{
		{"empty", "truncated", nil},
		{"cut in the middle", "", data[:len(data)/2]},
		{"cut before the trailer", "", data[:len(data)-40]},
		{"one bit flipped", "", altered},
		{"bytes after the trailer", "after the trailer", append(bytes.Clone(data), 0)},
		{"a newer format", "newer than this build's", newer},
		{"no header", "no header", headless},
		{"not a snapshot", "", []byte("PK\x03\x04 a zip file, say")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Verify(bytes.NewReader(tc.data))
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("err = %v, want ErrInvalid saying %q", err, tc.says)
			}
		})
	}
	// Every cut point is refused, not only those above.
	for cut := 0; cut < len(data); cut += len(data)/300 + 1 {
		if _, err := Verify(bytes.NewReader(data[:cut])); !errors.Is(err, ErrInvalid) {
			t.Fatalf("cut at %d of %d: %v", cut, len(data), err)
		}
	}
}
