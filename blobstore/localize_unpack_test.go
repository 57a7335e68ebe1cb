package blobstore

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// entry is one entry of an archive a test builds.
type entry struct {
	name, body, link string
	typ              byte // tar's: TypeReg when 0
	mode             int64
}

func tarOf(t *testing.T, gz bool, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	var tw *tar.Writer
	var zw *gzip.Writer
	if gz {
		zw = gzip.NewWriter(&buf)
		tw = tar.NewWriter(zw)
	} else {
		tw = tar.NewWriter(&buf)
	}
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Linkname: e.link, Mode: e.mode}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func zipOf(t *testing.T, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		switch e.typ {
		case tar.TypeSymlink:
			h.SetMode(fs.ModeSymlink | 0o777)
			e.body = e.link
		case tar.TypeDir:
			h.SetMode(fs.ModeDir | 0o755)
		default:
			h.SetMode(0o644)
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// unpack writes archive as name and unpacks it into a fresh directory.
func unpack(t *testing.T, name string, archive []byte, lim UnpackLimits) (string, error) {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.WriteFile(src, archive, 0o644); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "out")
	return dst, Unpack(src, name, dst, lim)
}

var roomy = UnpackLimits{MaxBytes: 1 << 20, MaxEntries: 100}

func readIn(t *testing.T, dst, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dst, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestUnpackTarGz(t *testing.T) {
	archive := tarOf(t, true,
		entry{name: "./"}.dir(),
		entry{name: "conf/"}.dir(),
		entry{name: "conf/app.yaml", body: "a: 1\n"},
		entry{name: "bin/run", body: "#!/bin/sh\n", mode: 0o755},
		entry{name: "current", typ: tar.TypeSymlink, link: "conf/app.yaml"},
		entry{name: "conf/same.yaml", typ: tar.TypeLink, link: "conf/app.yaml"},
	)
	for _, name := range []string{"dict.tar.gz", "dict.tgz", "no-extension"} {
		dst, err := unpack(t, name, archive, roomy)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := readIn(t, dst, "current"); got != "a: 1\n" {
			t.Fatalf("%s: through the link: %q", name, got)
		}
		if got := readIn(t, dst, "conf/same.yaml"); got != "a: 1\n" {
			t.Fatalf("%s: the hard link: %q", name, got)
		}
		fi, err := os.Stat(filepath.Join(dst, "bin/run"))
		if err != nil || fi.Mode().Perm() != 0o555 {
			t.Fatalf("%s: bin/run: %v %v, want read-only and executable", name, fi, err)
		}
		if fi, _ := os.Stat(filepath.Join(dst, "conf/app.yaml")); fi.Mode().Perm() != 0o444 {
			t.Fatalf("%s: conf/app.yaml is %v, want 0444", name, fi.Mode().Perm())
		}
	}
}

func (e entry) dir() entry { e.typ = tar.TypeDir; e.mode = 0o755; return e }

func TestUnpackTarAndZip(t *testing.T) {
	dst, err := unpack(t, "plain.tar", tarOf(t, false, entry{name: "a/b.txt", body: "tar"}), roomy)
	if err != nil || readIn(t, dst, "a/b.txt") != "tar" {
		t.Fatalf("tar: %v", err)
	}
	z := zipOf(t, entry{name: "d/"}.dir(), entry{name: "d/x.txt", body: "zip"}, entry{name: "x", typ: tar.TypeSymlink, link: "d/x.txt"})
	for _, name := range []string{"model.zip", "lib.jar", "sniffed"} {
		dst, err := unpack(t, name, z, roomy)
		if err != nil || readIn(t, dst, "x") != "zip" {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

func TestUnpackRefusesHostileArchives(t *testing.T) {
	big := strings.Repeat("z", 2<<20) // compresses to almost nothing
	cases := map[string][]byte{
		"absolute path":      tarOf(t, true, entry{name: "/etc/passwd", body: "x"}),
		"climbs out":         tarOf(t, true, entry{name: "a/../../evil", body: "x"}),
		"dot dot":            tarOf(t, true, entry{name: "..", body: "x"}),
		"absolute symlink":   tarOf(t, true, entry{name: "l", typ: tar.TypeSymlink, link: "/etc"}),
		"symlink out":        tarOf(t, true, entry{name: "a/l", typ: tar.TypeSymlink, link: "../../etc"}),
		"symlink chain out":  tarOf(t, true, entry{name: "x", typ: tar.TypeSymlink, link: "."}, entry{name: "y", typ: tar.TypeSymlink, link: "x/.."}),
		"dangling symlink":   tarOf(t, true, entry{name: "l", typ: tar.TypeSymlink, link: "nothing"}),
		"write through link": tarOf(t, true, entry{name: "l", typ: tar.TypeSymlink, link: "d"}, entry{name: "l/x", body: "x"}),
		// Each link lexically inside, but made through the one before it
		// the last would land beside the directory: refused before any is made.
		"link under a link": tarOf(t, true, entry{name: "d", typ: tar.TypeSymlink, link: "."},
			entry{name: "d/d/e", typ: tar.TypeSymlink, link: "../.."}, entry{name: "e/x/y", typ: tar.TypeSymlink, link: "z"}),
		"hard link out":       tarOf(t, true, entry{name: "h", typ: tar.TypeLink, link: "../../etc/passwd"}),
		"hard link absolute":  tarOf(t, true, entry{name: "h", typ: tar.TypeLink, link: "/etc/passwd"}),
		"hard link to none":   tarOf(t, true, entry{name: "h", typ: tar.TypeLink, link: "missing"}),
		"device":              tarOf(t, true, entry{name: "dev", typ: tar.TypeChar}),
		"fifo":                tarOf(t, true, entry{name: "p", typ: tar.TypeFifo}),
		"twice":               tarOf(t, true, entry{name: "a", body: "1"}, entry{name: "a", body: "2"}),
		"too many bytes":      tarOf(t, true, entry{name: "bomb", body: big}),
		"too many entries":    tarOf(t, true, manyEntries(101)...),
		"zip climbs out":      zipOf(t, entry{name: "../evil", body: "x"}),
		"zip absolute":        zipOf(t, entry{name: "/tmp/evil", body: "x"}),
		"zip symlink out":     zipOf(t, entry{name: "l", typ: tar.TypeSymlink, link: "../../etc"}),
		"zip too many bytes":  zipOf(t, entry{name: "bomb", body: big}),
		"not an archive":      []byte("plain text, not an archive at all"),
		"gzip but not tar":    gzipOf(t, "not a tar"),
		"truncated tar.gz":    tarOf(t, true, entry{name: "a", body: "x"})[:20],
		"backslash traversal": zipOf(t, entry{name: "..\\evil", body: "x"}),
	}
	for name, archive := range cases {
		t.Run(name, func(t *testing.T) {
			file := "blob.tar.gz"
			if strings.HasPrefix(name, "zip") || name == "backslash traversal" {
				file = "blob.zip"
			}
			if name == "not an archive" {
				file = "blob"
			}
			parent := t.TempDir()
			dst, err := unpack(t, file, archive, roomy)
			if err == nil {
				t.Fatalf("unpacked")
			}
			if !errors.Is(err, ErrUnsafeArchive) {
				t.Fatalf("err %v, want ErrUnsafeArchive", err)
			}
			if _, serr := os.Lstat(dst); !errors.Is(serr, fs.ErrNotExist) {
				t.Fatalf("the directory stayed after a refusal: %v", serr)
			}
			if _, serr := os.Lstat(filepath.Join(parent, "..", "evil")); serr == nil {
				t.Fatalf("an entry landed outside")
			}
			if beside, _ := os.ReadDir(filepath.Dir(dst)); len(beside) != 1 { // src only
				t.Fatalf("entries landed beside the directory: %v", beside)
			}
			// Nor two levels up, where the test's temporary directories are.
			above, _ := os.ReadDir(filepath.Dir(filepath.Dir(dst)))
			for _, e := range above {
				if strings.Trim(e.Name(), "0123456789") != "" {
					t.Fatalf("an entry landed above the directory: %s", e.Name())
				}
			}
		})
	}
}

func manyEntries(n int) []entry {
	out := make([]entry, n)
	for i := range out {
		out[i] = entry{name: "f" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + string(rune('a'+i/26)), body: "x"}
	}
	return out
}

func gzipOf(t *testing.T, s string) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte(s))
	zw.Close()
	return buf.Bytes()
}
