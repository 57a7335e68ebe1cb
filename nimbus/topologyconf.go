package nimbus

import (
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/nimbusha/nimbus/configs"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/validate"
)

// A topology's conf (TopologySpec.config) overrides the nimbus's value of
// the topology.* keys the nimbus acts on, as in Storm: the replication a
// submission waits for, and how long kill and rebalance wait when the
// request names no wait. The conf was checked at submit (validate.Spec),
// so its values parse.

// topologySettings are the keys the nimbus acts on for one topology.
type topologySettings struct {
	messageTimeout     time.Duration // topology.message.timeout.secs
	minReplication     int           // topology.min.replication.count
	maxReplicationWait time.Duration // topology.max.replication.wait.time.sec
	waitForever        bool          // ... is -1
}

// settingsOf is the topology's settings: its conf's values, else cfg's.
func settingsOf(cfg *configs.Config, conf map[string]string) topologySettings {
	set := topologySettings{messageTimeout: cfg.TopologyMessageTimeout, minReplication: cfg.MinReplicationCount}
	set.maxReplicationWait, set.waitForever = cfg.MaxReplicationWait()
	if n, ok := validate.TopologyInt(conf, validate.TopologyMessageTimeout); ok {
		set.messageTimeout = time.Duration(n) * time.Second
	}
	if n, ok := validate.TopologyInt(conf, validate.TopologyMinReplication); ok {
		set.minReplication = n
	}
	if n, ok := validate.TopologyInt(conf, validate.TopologyMaxReplWait); ok {
		set.maxReplicationWait, set.waitForever = time.Duration(n)*time.Second, n == configs.WaitForever
		if set.waitForever {
			set.maxReplicationWait = 0
		}
	}
	return set
}

// Where an effective conf entry came from (ConfEntry.source).
const (
	confFromTopology = "topology"         // the topology's own conf
	confFromNimbus   = "nimbus"           // the nimbus's value, the default
	confFromSpec     = "spec.num_workers" // topology.workers
)

// redactedValue replaces a secret's value in an effective conf.
const redactedValue = "<redacted>"

// effectiveConf is the conf a topology runs with: its spec's conf over
// the nimbus's values of the topology.* keys it acts on, topology.workers
// from the spec's workers, secrets redacted (configs.IsSecretKey). Entries are
// sorted by key.
func effectiveConf(cfg *configs.Config, spec *nimbusv1.TopologySpec) []*nimbusv1.ConfEntry {
	conf := map[string]*nimbusv1.ConfEntry{}
	put := func(k, v, from string) { conf[k] = &nimbusv1.ConfEntry{Key: k, Value: v, Source: from} }
	wait := cfg.MaxReplicationWaitSecs
	put(validate.TopologyMessageTimeout, strconv.Itoa(int(cfg.TopologyMessageTimeout/time.Second)), confFromNimbus)
	put(validate.TopologyMinReplication, strconv.Itoa(cfg.MinReplicationCount), confFromNimbus)
	put(validate.TopologyMaxReplWait, strconv.Itoa(wait), confFromNimbus)
	for k, v := range spec.GetConfig() {
		put(k, v, confFromTopology)
	}
	if _, ok := spec.GetConfig()[validate.TopologyWorkers]; !ok {
		put(validate.TopologyWorkers, strconv.Itoa(int(spec.GetNumWorkers())), confFromSpec)
	}
	out := make([]*nimbusv1.ConfEntry, 0, len(conf))
	for _, k := range slices.Sorted(maps.Keys(conf)) {
		e := conf[k]
		if configs.IsSecretKey(k) {
			e.Value, e.Redacted = redactedValue, true
		}
		out = append(out, e)
	}
	return out
}
