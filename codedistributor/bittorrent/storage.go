package bittorrent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/anacrolix/torrent/metainfo"
	"github.com/anacrolix/torrent/storage"
)

// fileStorage keeps a torrent's files in one directory under their own
// names, open only while the torrent is in the client. (The library's
// file storage maps files for writing until the process exits: a
// downloaded program could not be run, "text file busy", and removed code
// would keep its disk space.)
//
// A seed's storage opens the store's files read-only and reports every
// piece complete: the store verified them. A download's storage starts
// with no piece complete, so nothing is hashed before it arrives.
//
// Files are opened twice: for writing (downloads only), closed when the
// torrent is dropped, and for reading, closed readGrace later. The
// library may still serve a peer's request from a torrent it is dropping,
// and a read that fails then crashes it (anacrolix/torrent v1.61.0,
// PeerConn.servePeerRequest); a read-only descriptor neither stops a
// program from running nor survives long.
type fileStorage struct {
	dir  string
	seed bool
}

var errReadOnly = errors.New("bittorrent: a seed never writes the store")

func (s fileStorage) Close() error { return nil }

func (s fileStorage) OpenTorrent(_ context.Context, info *metainfo.Info, _ metainfo.Hash) (storage.TorrentImpl, error) {
	t := &torrentFiles{seed: s.seed, complete: make([]bool, info.NumPieces())}
	var off int64
	for _, f := range info.UpvertedFiles() {
		path := filepath.Join(s.dir, filepath.Join(f.BestPath()...)) // one plain name: torrentOf checked
		sp := span{off: off, length: f.Length}
		var err error
		if !s.seed {
			sp.w, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
		}
		if err == nil {
			sp.r, err = os.Open(path)
		}
		t.files = append(t.files, sp)
		if err != nil {
			t.closeNow()
			return storage.TorrentImpl{}, fmt.Errorf("bittorrent: %w", err)
		}
		off += f.Length
	}
	for i := range t.complete {
		t.complete[i] = s.seed
	}
	return storage.TorrentImpl{Piece: t.piece, Close: t.close}, nil
}

// torrentFiles is one torrent's open files, end to end.
type torrentFiles struct {
	seed  bool
	files []span

	mu       sync.Mutex
	complete []bool // by piece
}

type span struct {
	r, w   *os.File // w is nil for a seed
	off    int64    // in the torrent
	length int64
}

// readGrace is how long a dropped torrent's files stay readable.
const readGrace = 10 * time.Second

// close closes the files for writing now, for reading after readGrace.
func (t *torrentFiles) close() error {
	var errs []error
	for _, s := range t.files {
		if s.w != nil {
			errs = append(errs, s.w.Close())
		}
	}
	time.AfterFunc(readGrace, func() { t.closeNow() })
	return errors.Join(errs...)
}

func (t *torrentFiles) closeNow() {
	for _, s := range t.files {
		for _, f := range []*os.File{s.r, s.w} {
			if f != nil {
				f.Close()
			}
		}
	}
}

func (t *torrentFiles) piece(p metainfo.Piece) storage.PieceImpl {
	return &piece{t: t, index: p.Index(), off: p.Offset()}
}

// each calls f for the part of every file that [off, off+n) covers, with
// the file, the offset in it, and the range of b.
func (t *torrentFiles) each(off int64, n int, write bool, f func(file *os.File, at int64, lo, hi int) (int, error)) (int, error) {
	done := 0
	for _, s := range t.files {
		if done == n {
			break
		}
		pos := off + int64(done)
		if pos >= s.off+s.length || pos < s.off {
			continue
		}
		hi := done + int(min(int64(n-done), s.off+s.length-pos))
		file := s.r
		if write {
			file = s.w
		}
		k, err := f(file, pos-s.off, done, hi)
		done += k
		if err != nil {
			return done, err
		}
	}
	if done < n {
		return done, fmt.Errorf("bittorrent: offset %d+%d is past the torrent's end", off, n)
	}
	return done, nil
}

// piece is a view of one piece; the library makes one per operation.
type piece struct {
	t     *torrentFiles
	index int
	off   int64 // in the torrent
}

func (p *piece) ReadAt(b []byte, off int64) (int, error) {
	return p.t.each(p.off+off, len(b), false, func(f *os.File, at int64, lo, hi int) (int, error) {
		return f.ReadAt(b[lo:hi], at)
	})
}

func (p *piece) WriteAt(b []byte, off int64) (int, error) {
	if p.t.seed {
		return 0, errReadOnly
	}
	return p.t.each(p.off+off, len(b), true, func(f *os.File, at int64, lo, hi int) (int, error) {
		return f.WriteAt(b[lo:hi], at)
	})
}

func (p *piece) MarkComplete() error    { return p.mark(true) }
func (p *piece) MarkNotComplete() error { return p.mark(false) }

func (p *piece) mark(complete bool) error {
	p.t.mu.Lock()
	defer p.t.mu.Unlock()
	p.t.complete[p.index] = complete
	return nil
}

func (p *piece) Completion() storage.Completion {
	p.t.mu.Lock()
	defer p.t.mu.Unlock()
	return storage.Completion{Ok: true, Complete: p.t.complete[p.index]}
}
