package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/logging"
)

// settle is how long the file must be quiet before it is read: an editor
// or a ConfigMap update writes in several steps, and a file read between
// two of them would be reported as invalid.
const settle = 100 * time.Millisecond

// Reloader reads a daemon's configuration file again when it changes or on
// SIGHUP, and puts in force the keys that are safe to change while running
// (configs.Reloadable): log.level itself, the rest through apply, the
// daemon's part (the authorizer's policy, the upload limits). Other
// changes are logged as needing a restart and not applied; a file that no
// longer loads or validates leaves the last good configuration in force.
// It is safe for concurrent use.
type Reloader struct {
	log     *slog.Logger
	apply   func(configs.Reload)
	mu      sync.Mutex // one reload at a time
	current atomic.Pointer[configs.Config]
}

// NewReloader returns the reloader of a daemon started with cfg, logging
// to log (whose level it sets, when logging.New built it). apply is called
// with each reload that changed a reloadable key, before Reload returns.
// It starts nothing: run Run.
func NewReloader(cfg *configs.Config, log *slog.Logger, apply func(configs.Reload)) *Reloader {
	r := &Reloader{log: log.With("component", "config"), apply: apply}
	r.current.Store(cfg)
	return r
}

// Current is the configuration in force.
func (r *Reloader) Current() *configs.Config { return r.current.Load() }

// Reload reads the configuration again and applies what it may, logging
// the outcome: the applied changes at INFO (and, through apply, the audit
// line), the keys that need a restart at WARN, a file that does not load
// at ERROR with the reason, keeping the configuration in force. It returns
// what it did, or the reason it kept the configuration.
func (r *Reloader) Reload() (configs.Reload, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	running := r.current.Load()
	next, _, err := configs.Reread(running)
	var rl configs.Reload
	if err == nil {
		rl, err = configs.Apply(running, next)
	}
	if err != nil {
		r.log.Error("configuration not reloaded; the last good configuration stays in force",
			"file", running.File, "err", errors.Join(configs.Leaves(err)...))
		return configs.Reload{}, err
	}
	if len(rl.Restart) > 0 {
		r.log.Warn("configuration changes need a restart; not applied",
			"file", running.File, "keys", configs.KeysOf(rl.Restart), "changes", changeTexts(rl.Restart))
	}
	if len(rl.Applied) == 0 {
		return rl, nil
	}
	if rl.Config.LogLevel != running.LogLevel {
		if err := logging.SetLevel(r.log, rl.Config.LogLevel); err != nil {
			r.log.Warn("log level not changed", "err", err)
		}
	}
	r.current.Store(rl.Config)
	if r.apply != nil {
		r.apply(rl)
	}
	r.log.Info("configuration reloaded", "file", running.File, "keys", configs.KeysOf(rl.Applied), "changes", changeTexts(rl.Applied))
	return rl, nil
}

func changeTexts(changes []configs.Change) []string {
	out := make([]string, len(changes))
	for i, c := range changes {
		out[i] = c.String()
	}
	return out
}

// Run reloads on SIGHUP and whenever the configuration file changes, until
// ctx ends. It watches the file's directory, not the file: editors and
// Kubernetes replace a file (a rename, a symbolic link switched) rather
// than write it. Without a file it only waits for ctx. Run it with
// Lifecycle.Go.
func (r *Reloader) Run(ctx context.Context) {
	file := r.current.Load().File
	if file == "" {
		<-ctx.Done()
		return
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	events, stop, err := watchDir(file, r.log)
	if err != nil {
		r.log.Warn("configuration file not watched; SIGHUP reloads it", "file", file, "err", err)
	} else {
		defer stop()
	}
	quiet := time.NewTimer(settle)
	quiet.Stop()
	defer quiet.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			r.log.Info("SIGHUP: reloading the configuration", "file", file)
			_, _ = r.Reload() // logged
		case <-events:
			quiet.Reset(settle)
		case <-quiet.C:
			_, _ = r.Reload() // logged
		}
	}
}

// watchDir returns a channel that receives a value whenever something in
// file's directory that could be file changes, and a stop that ends the
// watch. The channel's sender is the watcher's own goroutine, which stop
// ends and waits for.
// An error of the watcher is logged; one that says events were lost counts
// as a change.
func watchDir(file string, log *slog.Logger) (<-chan struct{}, func(), error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, nil, err
	}
	dir := filepath.Dir(file)
	if err := w.Add(dir); err != nil {
		w.Close()
		return nil, nil, fmt.Errorf("watch %s: %w", dir, err)
	}
	out := make(chan struct{}, 1)
	done := make(chan struct{})
	changed := func() {
		select { // one pending signal is enough
		case out <- struct{}{}:
		default:
		}
	}
	go func() { // owned by stop
		defer close(done)
		for {
			select {
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if ev.Op != fsnotify.Chmod {
					changed()
				}
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				log.Warn("watching the configuration file's directory", "dir", dir, "err", err)
				if errors.Is(err, fsnotify.ErrEventOverflow) {
					changed()
				}
			}
		}
	}()
	return out, func() { w.Close(); <-done }, nil
}
