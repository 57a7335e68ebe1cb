package certs

import (
	"crypto/x509"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultCheckInterval is how often, at most, a Reloader looks at its files
// for a change: a stat of three files per second whatever the handshake
// rate.
const DefaultCheckInterval = time.Second

// Reloader holds a process's TLS material and re-reads its files when they
// change. It starts no goroutine: the tls.Config callbacks it hands out
// (ServerConfig, ClientConfig) check the files during handshakes. It is safe
// for concurrent use.
type Reloader struct {
	files    Files
	log      *slog.Logger
	interval time.Duration
	now      func() time.Time

	cur       atomic.Pointer[material] // what handshakes use
	lastCheck atomic.Int64             // unix nanoseconds of the last look at the files

	mu     sync.Mutex // one check at a time; guards loaded and failed
	loaded stamps     // the files as they were when cur was read
	failed *stamps    // the files as they were when a reload last failed and was logged
}

// Load reads files and returns a Reloader that keeps them current. It fails,
// naming the file and the problem, if they cannot make a working TLS
// configuration. It logs the certificate's subject and expiry at info.
func Load(files Files, logger *slog.Logger) (*Reloader, error) {
	r := &Reloader{
		files:    files,
		log:      logger.With("component", "certs"),
		interval: DefaultCheckInterval,
		now:      time.Now,
	}
	now := r.now()
	st := statFiles(files)
	m, err := load(files, now)
	if err != nil {
		return nil, err
	}
	r.cur.Store(m)
	r.loaded = st
	r.lastCheck.Store(now.UnixNano())
	r.logLoaded("loaded TLS material", m, now)
	return r, nil
}

// Certificate returns this process's certificate as handshakes now present
// it, after a look at the files as a handshake would, or nil if the process
// has none (a nil Reloader: TLS off).
func (r *Reloader) Certificate() *x509.Certificate {
	if r == nil {
		return nil // TLS off
	}
	return r.current().leaf
}

// current returns the material to use now, first re-reading the files if
// their last check is an interval old and they have changed. One caller
// checks; the others use the material they find.
func (r *Reloader) current() *material {
	now := r.now()
	last := r.lastCheck.Load()
	if now.UnixNano()-last >= int64(r.interval) && r.lastCheck.CompareAndSwap(last, now.UnixNano()) {
		r.check(now)
	}
	return r.cur.Load()
}

// check re-reads the files if they differ from those in use. A reload that
// fails keeps the material in use, and is tried again at every check (a
// certificate not valid yet becomes valid), but logged once per change. A
// handshake never waits for another's check (on a slow disk): it goes on
// with the material in use.
func (r *Reloader) check(now time.Time) {
	if !r.mu.TryLock() {
		return
	}
	defer r.mu.Unlock()
	st := statFiles(r.files)
	if st.equal(r.loaded) {
		return
	}
	m, err := load(r.files, now)
	if err != nil {
		if r.failed == nil || !st.equal(*r.failed) {
			r.failed = &st
			old := r.cur.Load()
			r.log.Warn("TLS files changed but cannot be used; keeping the previous material",
				"err", err, "subject", leafSubject(old), "not_after", leafExpiry(old))
		}
		return
	}
	r.cur.Store(m)
	r.loaded, r.failed = st, nil
	r.logLoaded("reloaded TLS material", m, now)
}

// logLoaded logs what m is: the certificate's subject and expiry, and a
// warning if the truststore would not verify it.
func (r *Reloader) logLoaded(msg string, m *material, now time.Time) {
	r.log.Info(msg, "cert", m.files.Cert, "subject", leafSubject(m), "not_after", leafExpiry(m),
		"truststore", m.files.Truststore, "cas", len(m.cas))
	if err := m.trusted(now); err != nil {
		r.log.Warn("peers that share this truststore will refuse this process's certificate", "err", err)
	}
}

func leafSubject(m *material) string {
	if m.leaf == nil {
		return "none"
	}
	return subject(m.leaf)
}

func leafExpiry(m *material) string {
	if m.leaf == nil {
		return "none"
	}
	return date(m.leaf.NotAfter)
}

// stamps are the identities of the three files: a file is taken to have
// changed when its size, modification time or inode did (a rename over it).
type stamps [3]os.FileInfo

// statFiles stamps f's files; a file that cannot be stat'd (or is not
// configured) has a nil stamp.
func statFiles(f Files) stamps {
	var st stamps
	for i, p := range []string{f.Cert, f.Key, f.Truststore} {
		if p == "" {
			continue
		}
		if fi, err := os.Stat(p); err == nil {
			st[i] = fi
		}
	}
	return st
}

func (s stamps) equal(o stamps) bool {
	for i := range s {
		a, b := s[i], o[i]
		if (a == nil) != (b == nil) {
			return false
		}
		if a == nil {
			continue
		}
		if a.Size() != b.Size() || !a.ModTime().Equal(b.ModTime()) || !os.SameFile(a, b) {
			return false
		}
	}
	return true
}
