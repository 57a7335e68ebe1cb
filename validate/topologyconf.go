package validate

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/nimbusha/nimbus/configs"
)

// Keys of a topology's conf (TopologySpec.config) that Nimbus-HA reads
// beyond configs.TopologyUsers and configs.TopologyEnvironment. The first
// three are also nimbus keys: the nimbus's value is the default for a
// topology that does not set its own, as in Storm.
const (
	TopologyMessageTimeout = configs.KeyTopologyMessageTimeout // kill and rebalance wait, in seconds
	TopologyMinReplication = configs.KeyMinReplicationCount    // replicas a submission waits for
	TopologyMaxReplWait    = configs.KeyMaxReplicationWait     // seconds it waits at most; -1 forever
	TopologyWorkers        = "topology.workers"                // spec.num_workers, when that is 0
	TopologyDebug          = "topology.debug"                  // a bool; carried to the workers only
)

// Ranges of the topology keys. A timeout is bounded like wait_secs; a
// replication count beyond any real cluster's nimbuses is a mistake.
const maxMinReplication = 1000

// topologyKeys checks the value of each known topology.* key; other keys
// pass, since Storm topologies carry many the nimbus does not read.
var topologyKeys = map[string]func(string) string{
	TopologyMessageTimeout: intIn(1, maxWaitSecs),
	TopologyMinReplication: intIn(1, maxMinReplication),
	TopologyMaxReplWait:    intIn(configs.WaitForever, maxWaitSecs),
	TopologyWorkers:        intIn(1, maxNumWorkers),
	TopologyDebug:          isBool,
	TopologyBlobstoreMap: func(v string) string {
		if _, err := ParseBlobstoreMap("value", v); err != nil {
			return err.Error()
		}
		return ""
	},
	configs.TopologyUsers: isUserList,
	configs.TopologyEnvironment: func(v string) string {
		if _, err := configs.ParseTopologyEnvironment(v); err != nil {
			return err.Error()
		}
		return ""
	},
}

// TopologyConfKeys returns the topology.* keys whose values submit checks.
func TopologyConfKeys() []string { return slices.Sorted(maps.Keys(topologyKeys)) }

// checkTopologyKeys checks the known keys of config, in sorted order.
func checkTopologyKeys(config map[string]string) error {
	for _, k := range TopologyConfKeys() {
		v, ok := config[k]
		if !ok {
			continue
		}
		if reason := topologyKeys[k](v); reason != "" {
			return Invalid("spec.config["+showValue(k)+"]", "%s", reason)
		}
	}
	return nil
}

// intIn checks a decimal integer (spaces around it allowed) in [lo, hi].
func intIn(lo, hi int) func(string) string {
	return func(v string) string {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		switch {
		case err != nil:
			return fmt.Sprintf("%s is not an integer", showValue(v))
		case n < lo || n > hi:
			return fmt.Sprintf("must be between %d and %d, got %d", lo, hi, n)
		}
		return ""
	}
}

func isBool(v string) string {
	if _, err := strconv.ParseBool(strings.TrimSpace(v)); err != nil {
		return fmt.Sprintf("%s is not a boolean (true or false)", showValue(v))
	}
	return ""
}

// isUserList checks a comma-separated list of principals: each is shown in
// refusals and logs, so none may carry control characters.
func isUserList(v string) string {
	if strings.IndexFunc(v, unicode.IsControl) >= 0 {
		return fmt.Sprintf("must be comma-separated principals without control characters, got %s", showValue(v))
	}
	return ""
}

// TopologyInt returns the integer value of a known integer key of a
// checked conf, and false if the conf does not set it.
func TopologyInt(config map[string]string, key string) (int, bool) {
	v, ok := config[key]
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	return n, err == nil
}

// NumWorkers returns a checked spec's workers: spec.num_workers, or the
// conf's topology.workers when num_workers is 0.
func NumWorkers(spec interface {
	GetNumWorkers() int32
	GetConfig() map[string]string
}) int32 {
	if n := spec.GetNumWorkers(); n != 0 {
		return n
	}
	n, _ := TopologyInt(spec.GetConfig(), TopologyWorkers)
	return int32(n)
}
