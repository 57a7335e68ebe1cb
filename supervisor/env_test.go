package supervisor

import (
	"errors"
	"slices"
	"testing"

	"github.com/nimbusha/nimbus/configs"
)

// environ is a supervisor's environment for workerEnv.
func environ(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

var stormVars = []string{"STORM_TOPOLOGY_ID=t-1-1", "STORM_PORT=6700", "STORM_EXECUTORS=a[1-1]", "STORM_CODE_DIR=/code/t-1-1"}

func TestWorkerEnvIsAnAllowList(t *testing.T) {
	supervisor := map[string]string{
		"PATH": "/sbin:/usr/bin", "HOME": "/root", "USER": "root", "AWS_SECRET_ACCESS_KEY": "s3cr3t",
		"STORM_ZOOKEEPER_AUTH_PAYLOAD": "zk:secret", "JAVA_HOME": "/opt/java", "TZ": "UTC",
		"STORM_PORT": "1", // the supervisor's own, if it has one, is not the worker's
	}
	alice := &account{Name: "alice", UID: 1001, GID: 1001, Home: "/home/alice"}
	tests := []struct {
		name string
		src  envSources
		want []string
	}{{
		name: "as a user",
		src:  envSources{Storm: stormVars, User: alice, Pass: []string{"JAVA_HOME", "UNSET"}, Lookup: environ(supervisor), Topology: "GREETING=a=b, MODE=fast,"},
		want: []string{"GREETING=a=b", "HOME=/home/alice", "JAVA_HOME=/opt/java", "LOGNAME=alice", "MODE=fast", "PATH=/sbin:/usr/bin",
			"STORM_CODE_DIR=/code/t-1-1", "STORM_EXECUTORS=a[1-1]", "STORM_PORT=6700", "STORM_TOPOLOGY_ID=t-1-1", "USER=alice"},
	}, {
		name: "no PATH: the default; no user: no HOME, USER, LOGNAME",
		src:  envSources{Storm: stormVars, Lookup: environ(map[string]string{"AWS_SECRET_ACCESS_KEY": "s3cr3t", "HOME": "/root"})},
		want: append([]string{"PATH=" + DefaultWorkerPath}, stormVars[3], stormVars[2], stormVars[1], stormVars[0]),
	}, {
		name: "an empty PATH is none",
		src:  envSources{Lookup: environ(map[string]string{"PATH": ""})},
		want: []string{"PATH=" + DefaultWorkerPath},
	}, {
		name: "the user's HOME over supervisor.worker.env's, the topology's over both; STORM_* over all",
		src: envSources{Storm: stormVars[1:2], User: alice, Pass: []string{"HOME", "USER", "TZ", "STORM_PORT"}, Lookup: environ(supervisor),
			Topology: "TZ=Europe/Paris,PATH=/opt/bin,HOME=/tmp/alice"},
		want: []string{"HOME=/tmp/alice", "LOGNAME=alice", "PATH=/opt/bin", "STORM_PORT=6700", "TZ=Europe/Paris", "USER=alice"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := workerEnv(tc.src)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("workerEnv =\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

func TestWorkerEnvRefusesABadTopologyEnvironment(t *testing.T) {
	_, err := workerEnv(envSources{Storm: stormVars, Lookup: environ(nil), Topology: "STORM_PORT=1"})
	if !errors.Is(err, configs.ErrTopologyEnvironment) {
		t.Fatalf("a topology overriding STORM_PORT: %v, want ErrTopologyEnvironment", err)
	}
}
