package webui

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed static
var embedded embed.FS

// ContentSecurityPolicy is the policy every response carries: only this
// origin's scripts, styles and API, images from it or data: URLs, and no
// framing.
const ContentSecurityPolicy = "default-src 'self'; img-src 'self' data:; style-src 'self'; " +
	"script-src 'self'; connect-src 'self'; frame-ancestors 'none'"

// indexFile is the page served at "/"; it is not also served under /static/.
const indexFile = "index.html"

// contentTypes maps the extensions of static/ to their Content-Type, so
// that the answer does not depend on the host's mime.types.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
	".png":  "image/png",
	".ico":  "image/x-icon",
	".txt":  "text/plain; charset=utf-8",
}

// asset is what is known of one embedded file before any request.
type asset struct {
	contentType string
	etag        string
}

// Handler serves the UI: GET (and HEAD) / is the page, /static/<file> its
// assets; any other path is 404. Every response carries the security
// headers and Cache-Control: no-cache (browsers revalidate with the
// ETag, a hash of the file). Handler panics if the embedded files are
// malformed, which a test catches.
func Handler() http.Handler {
	static, err := fs.Sub(embedded, "static")
	if err != nil {
		panic(err)
	}
	assets, err := scan(static)
	if err != nil {
		panic(err)
	}
	index, err := fs.ReadFile(static, indexFile)
	if err != nil {
		panic(err)
	}
	files := http.StripPrefix("/static", http.FileServerFS(static))

	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		a := assets[indexFile]
		w.Header().Set("Content-Type", a.contentType)
		w.Header().Set("ETag", a.etag)
		http.ServeContent(w, r, indexFile, time.Time{}, bytes.NewReader(index))
	})
	mux.HandleFunc("GET /static/", func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, "/static/")
		a, ok := assets[name]
		if !ok || name == indexFile {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", a.contentType)
		w.Header().Set("ETag", a.etag)
		files.ServeHTTP(w, r)
	})
	return secure(mux)
}

// scan lists the regular files of static with their Content-Type and
// ETag. Directories are left out, so the file server never lists one.
func scan(static fs.FS) (map[string]asset, error) {
	assets := map[string]asset{}
	err := fs.WalkDir(static, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(static, name)
		if err != nil {
			return err
		}
		ct, ok := contentTypes[path.Ext(name)]
		if !ok {
			ct = "application/octet-stream"
		}
		sum := sha256.Sum256(data)
		assets[name] = asset{contentType: ct, etag: `"` + hex.EncodeToString(sum[:16]) + `"`}
		return nil
	})
	return assets, err
}

// secure adds the headers every answer carries, 404s included.
func secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		next.ServeHTTP(w, r)
	})
}
