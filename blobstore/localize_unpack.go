package blobstore

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
)

// ErrUnsafeArchive is an archive that a supervisor refuses to unpack: an
// entry that would land outside its directory, a link that points out of
// it, a special file, too many entries or bytes, or a format it does not
// know.
var ErrUnsafeArchive = errors.New("blobstore: archive refused")

// UnpackLimits bound what one archive may unpack to.
type UnpackLimits struct {
	MaxBytes   int64 // the content of every file together
	MaxEntries int
}

// DefaultMaxEntries bounds the entries of an archive a topology unpacks.
const DefaultMaxEntries = 100_000

// maxLinkTarget bounds a symbolic link's target in a zip (its content).
const maxLinkTarget = 4096

type archiveFormat int

const (
	formatUnknown archiveFormat = iota
	formatZip
	formatTar
	formatTarGz
)

// formatOf is the archive format of a blob named name (Storm's rule: .zip
// and .jar, .tar, .tar.gz and .tgz), else of its first bytes.
func formatOf(name string, head []byte) archiveFormat {
	lower := strings.ToLower(name)
	switch {
	case strings.HasSuffix(lower, ".zip"), strings.HasSuffix(lower, ".jar"):
		return formatZip
	case strings.HasSuffix(lower, ".tar.gz"), strings.HasSuffix(lower, ".tgz"):
		return formatTarGz
	case strings.HasSuffix(lower, ".tar"):
		return formatTar
	case bytes.HasPrefix(head, []byte("PK\x03\x04")), bytes.HasPrefix(head, []byte("PK\x05\x06")):
		return formatZip
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		return formatTarGz
	case len(head) >= 262 && string(head[257:262]) == "ustar":
		return formatTar
	}
	return formatUnknown
}

// Unpack unpacks the archive at src, a blob named name, into dst, which
// it creates (its parent must exist). It refuses (ErrUnsafeArchive) an
// entry whose path is absolute or climbs out with "..", a hard link to
// anything but a regular file unpacked before it, a symbolic link whose
// target is absolute or resolves outside dst, a device, FIFO or other
// special file, two entries of one path, and more than lim allows. Files
// are made read-only (0444, or 0555 when executable). Symbolic links are
// made last, so no entry is ever written through one, and each must then
// lead to something inside dst. On error dst is
// removed.
func Unpack(src, name, dst string, lim UnpackLimits) (err error) {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	head := make([]byte, 512)
	n, _ := io.ReadFull(f, head)
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if err := os.Mkdir(dst, 0o755); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dst)
		}
	}()
	u := &unpacker{dst: dst, lim: lim}
	switch formatOf(name, head[:n]) {
	case formatZip:
		err = u.zip(f)
	case formatTar:
		err = u.tar(f)
	case formatTarGz:
		var gz *gzip.Reader
		if gz, err = gzip.NewReader(f); err != nil {
			return fmt.Errorf("%w: %s: not gzip: %v", ErrUnsafeArchive, name, err)
		}
		err = u.tar(gz)
	default:
		return fmt.Errorf("%w: %s is not a .zip, .jar, .tar, .tar.gz or .tgz archive", ErrUnsafeArchive, name)
	}
	if err != nil {
		return err
	}
	return u.finish()
}

// unpacker writes one archive's entries under dst.
type unpacker struct {
	dst     string
	lim     UnpackLimits
	bytes   int64
	entries int
	links   []pendingLink // symbolic links, made last
}

type pendingLink struct{ name, target string }

// entryPath is the cleaned relative path of an archive entry; "" for the
// archive's root itself.
func (u *unpacker) entryPath(name string) (string, error) {
	clean := path.Clean(strings.ReplaceAll(name, "\\", "/"))
	switch {
	case path.IsAbs(clean):
		return "", fmt.Errorf("%w: entry %q is an absolute path", ErrUnsafeArchive, name)
	case clean == ".." || strings.HasPrefix(clean, "../"):
		return "", fmt.Errorf("%w: entry %q climbs out of the directory", ErrUnsafeArchive, name)
	case clean == ".":
		return "", nil
	}
	return clean, nil
}

func (u *unpacker) count(name string) error {
	u.entries++
	if u.lim.MaxEntries > 0 && u.entries > u.lim.MaxEntries {
		return fmt.Errorf("%w: more than %d entries (at %q)", ErrUnsafeArchive, u.lim.MaxEntries, name)
	}
	return nil
}

func (u *unpacker) tar(r io.Reader) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: not a tar archive: %v", ErrUnsafeArchive, err)
		}
		if err := u.count(h.Name); err != nil {
			return err
		}
		rel, err := u.entryPath(h.Name)
		if err != nil {
			return err
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = u.dir(rel)
		case tar.TypeReg, tar.TypeRegA:
			err = u.file(rel, h.FileInfo().Mode(), tr)
		case tar.TypeSymlink:
			err = u.symlink(rel, h.Linkname)
		case tar.TypeLink:
			err = u.hardlink(rel, h.Linkname)
		default:
			err = fmt.Errorf("%w: entry %q is a special file (tar type %q)", ErrUnsafeArchive, h.Name, h.Typeflag)
		}
		if err != nil {
			return err
		}
	}
}

func (u *unpacker) zip(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	zr, err := zip.NewReader(f, fi.Size())
	if err != nil {
		return fmt.Errorf("%w: not a zip archive: %v", ErrUnsafeArchive, err)
	}
	for _, zf := range zr.File {
		if err := u.count(zf.Name); err != nil {
			return err
		}
		rel, err := u.entryPath(zf.Name)
		if err != nil {
			return err
		}
		mode := zf.Mode()
		switch {
		case mode.IsDir():
			err = u.dir(rel)
		case mode&fs.ModeSymlink != 0:
			var target []byte
			if target, err = readZipEntry(zf, maxLinkTarget); err == nil {
				err = u.symlink(rel, string(target))
			}
		case mode.IsRegular():
			var rc io.ReadCloser
			if rc, err = zf.Open(); err == nil {
				err = u.file(rel, mode, rc)
				rc.Close()
			}
		default:
			err = fmt.Errorf("%w: entry %q is a special file (%v)", ErrUnsafeArchive, zf.Name, mode.Type())
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func readZipEntry(zf *zip.File, limit int64) ([]byte, error) {
	rc, err := zf.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%w: link %q has a target over %d bytes", ErrUnsafeArchive, zf.Name, limit)
	}
	return b, nil
}

func (u *unpacker) dir(rel string) error {
	if rel == "" {
		return nil
	}
	return os.MkdirAll(filepath.Join(u.dst, filepath.FromSlash(rel)), 0o755)
}

// file writes one regular file, never over an existing path, counting its
// bytes as they come (a header's size is not trusted).
func (u *unpacker) file(rel string, mode fs.FileMode, r io.Reader) error {
	if rel == "" {
		return fmt.Errorf("%w: a file entry names the directory itself", ErrUnsafeArchive)
	}
	p := filepath.Join(u.dst, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY|syscall.O_NOFOLLOW, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%w: entry %q comes twice", ErrUnsafeArchive, rel)
	}
	if err != nil {
		return err
	}
	room := int64(-1)
	if u.lim.MaxBytes > 0 {
		room = u.lim.MaxBytes - u.bytes
	}
	var n int64
	if room >= 0 {
		n, err = io.Copy(out, io.LimitReader(r, room+1))
	} else {
		n, err = io.Copy(out, r)
	}
	u.bytes += n
	if err == nil && room >= 0 && n > room {
		err = fmt.Errorf("%w: unpacks to more than %d bytes (at %q)", ErrUnsafeArchive, u.lim.MaxBytes, rel)
	}
	if err == nil {
		perm := fs.FileMode(0o444)
		if mode&0o111 != 0 {
			perm = 0o555
		}
		err = out.Chmod(perm)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// inside reports whether rel, a cleaned slash path relative to dst,
// stays inside it.
func inside(rel string) bool {
	return rel != ".." && !strings.HasPrefix(rel, "../") && !path.IsAbs(rel)
}

func (u *unpacker) symlink(rel, target string) error {
	if rel == "" {
		return fmt.Errorf("%w: a link entry names the directory itself", ErrUnsafeArchive)
	}
	if target == "" || path.IsAbs(target) || strings.Contains(target, "\\") {
		return fmt.Errorf("%w: link %q points at %q: only relative targets inside the directory", ErrUnsafeArchive, rel, target)
	}
	if !inside(path.Clean(path.Join(path.Dir(rel), target))) {
		return fmt.Errorf("%w: link %q points out of the directory (%q)", ErrUnsafeArchive, rel, target)
	}
	u.links = append(u.links, pendingLink{name: rel, target: target})
	return nil
}

// hardlink links rel to a regular file unpacked before it.
func (u *unpacker) hardlink(rel, target string) error {
	t, err := u.entryPath(target)
	if err != nil || t == "" {
		return fmt.Errorf("%w: hard link %q points out of the directory (%q)", ErrUnsafeArchive, rel, target)
	}
	if rel == "" {
		return fmt.Errorf("%w: a link entry names the directory itself", ErrUnsafeArchive)
	}
	src := filepath.Join(u.dst, filepath.FromSlash(t))
	fi, err := os.Lstat(src)
	if err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("%w: hard link %q points at %q, not a file unpacked before it", ErrUnsafeArchive, rel, target)
	}
	p := filepath.Join(u.dst, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	if err := os.Link(src, p); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w: entry %q comes twice", ErrUnsafeArchive, rel)
		}
		return err
	}
	return nil
}

// finish makes the symbolic links, then checks that each resolves to
// something inside dst: a chain of links, each inside on its own, may
// still lead out.
func (u *unpacker) finish() error {
	// A link under another link would be made through it, wherever that
	// one points: refused before anything is made. Everything else is
	// made already, with no link on its way.
	names := make(map[string]bool, len(u.links))
	for _, l := range u.links {
		names[l.name] = true
	}
	for _, l := range u.links {
		for dir := path.Dir(l.name); dir != "."; dir = path.Dir(dir) {
			if names[dir] {
				return fmt.Errorf("%w: link %q lies under link %q", ErrUnsafeArchive, l.name, dir)
			}
		}
	}
	for _, l := range u.links {
		p := filepath.Join(u.dst, filepath.FromSlash(l.name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.Symlink(l.target, p); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("%w: entry %q comes twice", ErrUnsafeArchive, l.name)
			}
			return err
		}
	}
	root, err := filepath.EvalSymlinks(u.dst)
	if err != nil {
		return err
	}
	for _, l := range u.links {
		// A dangling link is refused too: what it names outside could
		// appear later.
		real, err := filepath.EvalSymlinks(filepath.Join(u.dst, filepath.FromSlash(l.name)))
		if err != nil {
			return fmt.Errorf("%w: link %q: %v", ErrUnsafeArchive, l.name, err)
		}
		rel, err := filepath.Rel(root, real)
		if err != nil || !inside(filepath.ToSlash(rel)) {
			return fmt.Errorf("%w: link %q resolves out of the directory", ErrUnsafeArchive, l.name)
		}
	}
	return nil
}
