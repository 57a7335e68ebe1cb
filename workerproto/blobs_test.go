package workerproto

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func sum(s string) []byte { h := sha256.Sum256([]byte(s)); return h[:] }

func TestBlobsRoundTrip(t *testing.T) {
	in := Blobs{{LocalName: "words.txt", Version: 3, SHA256: sum("b")}, {LocalName: "model", Version: 1, SHA256: sum("a")}}
	b, err := EncodeBlobs(in)
	if err != nil {
		t.Fatal(err)
	}
	want := "model 1 " + hexOf(sum("a")) + "\nwords.txt 3 " + hexOf(sum("b")) + "\n"
	if string(b) != want {
		t.Fatalf("encoded %q, want %q", b, want)
	}
	out, err := ParseBlobs(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || out[0].LocalName != "model" || out[1].Version != 3 || !bytes.Equal(out[1].SHA256, sum("b")) {
		t.Fatalf("parsed %+v", out)
	}
	if got, ok := out.Find("words.txt"); !ok || got.Version != 3 {
		t.Fatalf("Find: %+v %v", got, ok)
	}
	if got := out[0].Path("/w/dir/blobs"); got != "/w/dir/model" {
		t.Fatalf("Path: %s", got)
	}
	if none, err := ParseBlobs(nil); err != nil || len(none) != 0 {
		t.Fatalf("empty: %v %v", none, err)
	}
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	var sb strings.Builder
	for _, c := range b {
		sb.WriteByte(digits[c>>4])
		sb.WriteByte(digits[c&15])
	}
	return sb.String()
}

func TestParseBlobsRefuses(t *testing.T) {
	h := hexOf(sum("x"))
	for name, in := range map[string]string{
		"no newline":       "a 1 " + h,
		"blank line":       "\n",
		"two fields":       "a 1\n",
		"four fields":      "a 1 " + h + " x\n",
		"version zero":     "a 0 " + h + "\n",
		"version negative": "a -1 " + h + "\n",
		"version plus":     "a +1 " + h + "\n",
		"version text":     "a one " + h + "\n",
		"short sha":        "a 1 abcd\n",
		"upper-case sha":   "a 1 " + strings.ToUpper(h) + "\n",
		"reserved name":    "status 1 " + h + "\n",
		"blobs file":       "blobs 1 " + h + "\n",
		"hidden name":      ".x 1 " + h + "\n",
		"slash":            "a/b 1 " + h + "\n",
		"dotdot":           ".. 1 " + h + "\n",
		"unsorted":         "b 1 " + h + "\na 1 " + h + "\n",
		"twice":            "a 1 " + h + "\na 2 " + h + "\n",
		"double space":     "a  1 " + h + "\n",
		"too large":        strings.Repeat("x", MaxBlobsBytes+1),
	} {
		if _, err := ParseBlobs([]byte(in)); !errors.Is(err, ErrBadBlobs) {
			t.Errorf("%s: %q: err %v, want ErrBadBlobs", name, in, err)
		}
	}
	if _, err := EncodeBlobs(Blobs{{LocalName: "a", Version: 1, SHA256: sum("x")}, {LocalName: "a", Version: 2, SHA256: sum("y")}}); !errors.Is(err, ErrBadBlobs) {
		t.Errorf("a local name twice encoded: %v", err)
	}
	if _, err := EncodeBlobs(Blobs{{LocalName: "errors", Version: 1, SHA256: sum("x")}}); !errors.Is(err, ErrBadBlobs) {
		t.Errorf("a reserved name encoded: %v", err)
	}
}

func TestReadBlobs(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, BlobsFileName)
	if bs, err := ReadBlobs(path); err != nil || bs != nil {
		t.Fatalf("missing file: %v %v", bs, err)
	}
	b, _ := EncodeBlobs(Blobs{{LocalName: "a", Version: 7, SHA256: sum("x")}})
	if err := ReplaceFile(path, b, nil); err != nil {
		t.Fatal(err)
	}
	w := FromEnv(func(k string) string {
		if k == EnvBlobsFile {
			return path
		}
		return ""
	})
	bs, err := w.Blobs()
	if err != nil || len(bs) != 1 || bs[0].Version != 7 {
		t.Fatalf("read %v %v", bs, err)
	}
	if err := os.Symlink(path, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadBlobs(filepath.Join(dir, "link")); err == nil {
		t.Fatal("a blobs file read through a symbolic link")
	}
}

// FuzzParseBlobs: whatever parses encodes back to the same bytes, and
// nothing panics.
func FuzzParseBlobs(f *testing.F) {
	f.Add([]byte("model 1 " + hexOf(sum("a")) + "\n"))
	f.Add([]byte(""))
	f.Add([]byte("a 9223372036854775807 " + hexOf(sum("b")) + "\nb 2 " + hexOf(sum("c")) + "\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		bs, err := ParseBlobs(in)
		if err != nil {
			if !errors.Is(err, ErrBadBlobs) {
				t.Fatalf("error %v does not wrap ErrBadBlobs", err)
			}
			return
		}
		out, err := EncodeBlobs(bs)
		if err != nil {
			t.Fatalf("parsed %q but cannot encode it: %v", in, err)
		}
		if !bytes.Equal(out, in) {
			t.Fatalf("parsed %q, encoded %q", in, out)
		}
	})
}
