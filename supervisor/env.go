package supervisor

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/nimbusha/nimbus/configs"
)

// DefaultWorkerPath is the PATH of workers whose supervisor has none.
const DefaultWorkerPath = "/usr/local/bin:/usr/bin:/bin"

// stormPrefix starts the names the supervisor sets for its workers
// (STORM_TOPOLOGY_ID...); a topology may set none of them.
const stormPrefix = "STORM_"

// ErrTopologyEnvironment: a topology's topology.environment cannot be
// used; its workers are refused, as workers without a user are.
var ErrTopologyEnvironment = errors.New("supervisor: invalid " + configs.TopologyEnvironment)

// envSources are what a worker's environment is built from.
type envSources struct {
	// Storm are the STORM_* variables, NAME=value.
	Storm []string
	// User is who the worker runs as, for HOME, USER and LOGNAME; nil for
	// none (a supervisor running as a uid with no passwd entry).
	User *account
	// Pass names the supervisor's variables workers get
	// (supervisor.worker.env).
	Pass []string
	// Lookup reads the supervisor's environment (os.LookupEnv).
	Lookup func(string) (string, bool)
	// Topology is the topology's topology.environment.
	Topology string
}

// workerEnv builds a worker's environment from an allow-list, never from
// the whole of the supervisor's: of the supervisor's variables only PATH
// (DefaultWorkerPath when it has none) and those named in
// supervisor.worker.env. Later sources win: PATH, supervisor.worker.env,
// HOME/USER/LOGNAME of the worker's user, topology.environment, STORM_*.
// A topology naming a STORM_* variable is an error, not silently
// overridden. The result is sorted by name.
func workerEnv(src envSources) ([]string, error) {
	topo, err := parseTopologyEnvironment(src.Topology)
	if err != nil {
		return nil, err
	}
	env := map[string]string{"PATH": DefaultWorkerPath}
	if v, ok := src.Lookup("PATH"); ok && v != "" {
		env["PATH"] = v
	}
	for _, name := range src.Pass {
		if v, ok := src.Lookup(name); ok {
			env[name] = v
		}
	}
	if a := src.User; a != nil {
		env["USER"], env["LOGNAME"] = a.Name, a.Name
		if a.Home != "" {
			env["HOME"] = a.Home
		}
	}
	maps.Copy(env, topo)
	for _, kv := range src.Storm {
		name, v, _ := strings.Cut(kv, "=")
		env[name] = v
	}
	out := make([]string, 0, len(env))
	for _, name := range slices.Sorted(maps.Keys(env)) {
		out = append(out, name+"="+env[name])
	}
	return out, nil
}

// parseTopologyEnvironment parses topology.environment: comma-separated
// NAME=value pairs (spaces around a pair are dropped; a value may hold
// '=' but not ','). A name must be a variable's name, appear once and not
// start with STORM_ (any case).
func parseTopologyEnvironment(s string) (map[string]string, error) {
	env := map[string]string{}
	for pair := range strings.SplitSeq(s, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		name, v, ok := strings.Cut(pair, "=")
		switch {
		case !ok:
			return nil, fmt.Errorf("%w: %q is not NAME=value", ErrTopologyEnvironment, pair)
		case !isEnvName(name):
			return nil, fmt.Errorf("%w: %q is not an environment variable's name", ErrTopologyEnvironment, name)
		case strings.HasPrefix(strings.ToUpper(name), stormPrefix):
			return nil, fmt.Errorf("%w: %s: the %s* variables are the supervisor's", ErrTopologyEnvironment, name, stormPrefix)
		case strings.ContainsRune(v, 0):
			return nil, fmt.Errorf("%w: the value of %s holds a NUL byte", ErrTopologyEnvironment, name)
		}
		if _, dup := env[name]; dup {
			return nil, fmt.Errorf("%w: %s is set twice", ErrTopologyEnvironment, name)
		}
		env[name] = v
	}
	return env, nil
}

// isEnvName reports whether s is a portable variable name:
// [A-Za-z_][A-Za-z0-9_]*.
func isEnvName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}
