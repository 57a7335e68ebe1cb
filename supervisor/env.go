package supervisor

import (
	"maps"
	"slices"
	"strings"

	"github.com/nimbusha/nimbus/configs"
)

// DefaultWorkerPath is the PATH of workers whose supervisor has none.
const DefaultWorkerPath = "/usr/local/bin:/usr/bin:/bin"

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
	topo, err := configs.ParseTopologyEnvironment(src.Topology)
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
