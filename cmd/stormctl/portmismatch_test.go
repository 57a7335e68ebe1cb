package main

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// A seed that names an HTTP port (the metrics or UI port) is said to be
// one, with where nimbus.seeds came from and TLS's setting, and exits
// "unavailable" at once rather than after retrying.
func TestSeedAtHTTPPortSaysWhichKey(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.Config.ErrorLog = slog.NewLogLogger(slog.DiscardHandler, slog.LevelDebug)
	srv.Start()
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	writeConf(t, dir, srv.Listener.Addr().String())
	conf := filepath.Join(dir, "storm.yaml")

	for _, cmd := range []string{"leader", "kill"} {
		args := []string{"--config", conf, cmd}
		if cmd == "kill" {
			args = append(args, "wordcount")
		}
		code, _, stderr := runArgs(args...)
		for _, want := range []string{"is it the metrics or UI port?", "nimbus.seeds from " + conf + ":1", "nimbus.grpc.tls.enable off from default"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("%s: stderr %q lacks %q", cmd, stderr, want)
			}
		}
		if code != exitUnavailable {
			t.Errorf("%s: exit %d, want %d", cmd, code, exitUnavailable)
		}
	}
}
