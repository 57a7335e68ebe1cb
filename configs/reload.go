package configs

import (
	"fmt"
	"maps"
	"strings"

	"github.com/spf13/pflag"
)

// reloadable are the keys a running daemon takes from a changed file: each
// is read afresh on every request that uses it, so a new value holds from
// the next request on without a moment where half the daemon runs on the
// old one. Every other key shapes something built once at start (a
// listener, the ZooKeeper session, TLS, the code store, a loop's period)
// and needs a restart.
var reloadable = map[string]bool{
	// Who may do what: the authorizer's policy, swapped whole.
	KeyNimbusAdmins:          true,
	KeyNimbusUsers:           true,
	KeyNimbusSupervisorUsers: true,
	KeyNimbusDaemonUsers:     true,
	KeyLogsUsers:             true,
	// The limits an upload is admitted and received under.
	KeyNimbusMaxUploads:        true,
	KeyNimbusUploadIdleTimeout: true,
	KeyNimbusMaxArtifactBytes:  true,
	KeyBlobMaxBytes:            true,
	// The level every logger of the daemon shares.
	KeyLogLevel: true,
}

// Reloadable reports whether a running daemon applies a new value of key
// from its file (the others need a restart).
func Reloadable(key string) bool { return reloadable[strings.ToLower(key)] }

// redacted stands for a secret's value in a Change.
const redacted = "(redacted)"

// Change is one key whose value differs between two configurations, as
// text (Setting's form); a secret's values are redacted.
type Change struct {
	Key      string
	Old, New string
}

func (c Change) String() string { return fmt.Sprintf("%s: %q -> %q", c.Key, c.Old, c.New) }

// Reload is what reading a daemon's configuration again comes to.
type Reload struct {
	// Config is the configuration in force from now on: the running one
	// with the reloadable keys' new values (and sources).
	Config *Config
	// Applied are the reloadable keys that changed.
	Applied []Change
	// Restart are the other keys that changed: not applied, they take
	// effect at the next start.
	Restart []Change
}

// Reread loads running's file, the environment and running's flags again:
// the configuration the daemon would start with now. The flags cannot
// change while a process runs, so their values are running's. Errors are
// Load's, naming where each bad value came from.
func Reread(running *Config) (*Config, []string, error) {
	fs := pflag.NewFlagSet("reload", pflag.ContinueOnError)
	for _, f := range fields {
		if src := running.Sources[f.key]; src.Kind == FromFlag {
			RegisterFlags(fs, f.key)
			_, text := describe(f.ptr(running))
			if err := fs.Set(f.key, text); err != nil {
				return nil, nil, fmt.Errorf("configs: --%s: %w", f.key, err)
			}
		}
	}
	return load(running.File, fs)
}

// Apply compares next, a configuration just loaded, with running, and
// returns what the daemon is to run with: running with the reloadable
// keys that changed set from next; the other changes are listed, never
// applied. The result has passed Validate; an error leaves running in
// force.
func Apply(running, next *Config) (Reload, error) {
	out := *running
	out.Sources = maps.Clone(running.Sources)
	if out.Sources == nil {
		out.Sources = map[string]Source{}
	}
	var r Reload
	for _, f := range fields {
		_, was := describe(f.ptr(running))
		_, now := describe(f.ptr(next))
		if was == now {
			continue
		}
		c := Change{Key: f.key, Old: was, New: now}
		if IsSecretKey(f.key) {
			c.Old, c.New = redacted, redacted
		}
		if !reloadable[f.key] {
			r.Restart = append(r.Restart, c)
			continue
		}
		if err := decode(f.ptr(&out), now, f.unit); err != nil {
			return Reload{}, &KeyError{Key: f.key, Source: next.Sources[f.key], Err: err}
		}
		out.Sources[f.key] = next.Sources[f.key]
		r.Applied = append(r.Applied, c)
	}
	if err := out.Validate(); err != nil {
		return Reload{}, attribute(err, out.Sources)
	}
	r.Config = &out
	return r, nil
}

// KeysOf lists the keys of changes, for a log line.
func KeysOf(changes []Change) []string {
	keys := make([]string, len(changes))
	for i, c := range changes {
		keys[i] = c.Key
	}
	return keys
}
