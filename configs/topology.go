package configs

import (
	"errors"
	"fmt"
	"strings"
)

// workerEnvPrefix starts the names the supervisor sets for its workers
// (STORM_TOPOLOGY_ID...); a topology may set none of them.
const workerEnvPrefix = "STORM_"

// ErrTopologyEnvironment: a topology's topology.environment cannot be
// used. Submit refuses it; a supervisor refuses to start its workers.
var ErrTopologyEnvironment = errors.New("configs: invalid " + TopologyEnvironment)

// ParseTopologyEnvironment parses topology.environment: comma-separated
// NAME=value pairs (spaces around a pair are dropped; a value may hold
// '=' but not ','). A name must be a variable's name, appear once and not
// start with STORM_ (any case).
func ParseTopologyEnvironment(s string) (map[string]string, error) {
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
		case strings.HasPrefix(strings.ToUpper(name), workerEnvPrefix):
			return nil, fmt.Errorf("%w: %s: the %s* variables are the supervisor's", ErrTopologyEnvironment, name, workerEnvPrefix)
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
