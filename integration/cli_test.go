package integration

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
)

func TestStormctlAgainstARealCluster(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(2*time.Second))
	ps := c.StartNimbuses(t, 3)
	_, leader := c.WaitLeader(t, ps, 10*time.Second)
	seeds := "127.0.0.1:1," + ps[0].Addr() // a dead seed first: the next answers

	out, _, code := stormctl(t, "--seeds", seeds, "leader")
	if code != 0 || !strings.Contains(out, strings.Split(leader.Addr(), ":")[1]) {
		t.Fatalf("leader: exit %d, output:\n%s", code, out)
	}
	// The three, and the dead seed, which no nimbus registered: offline.
	out, _, code = stormctl(t, "--seeds", seeds, "nimbuses")
	if code != 0 || strings.Count(out, "127.0.0.1") != 4 || !regexp.MustCompile(`127\.0\.0\.1\s+1\s+offline`).MatchString(out) {
		t.Fatalf("nimbuses: exit %d, output:\n%s", code, out)
	}
	out, _, code = stormctl(t, "--seeds", seeds, "cluster", "-o", "json")
	if code != 0 {
		t.Fatalf("cluster -o json: exit %d", code)
	}
	var doc struct {
		Cluster struct {
			Nimbuses []struct {
				IsLeader bool  `json:"isLeader"`
				Epoch    int64 `json:"epoch"`
			} `json:"nimbuses"`
		} `json:"cluster"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("cluster -o json is not JSON: %v\n%s", err, out)
	}
	if len(doc.Cluster.Nimbuses) != 3 {
		t.Fatalf("cluster -o json lists %d nimbuses", len(doc.Cluster.Nimbuses))
	}

	_, errOut, code := stormctl(t, "--seeds", "127.0.0.1:1", "leader")
	if code != 8 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.HasPrefix(errOut, "stormctl: ") {
		t.Fatalf("no seed answering: exit %d, stderr %q; want 8 (unavailable) and one line", code, errOut)
	}
}

func stormctl(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := exec.Command(testcluster.Bin(t).Path("stormctl"), append([]string{"--timeout", "5s"}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

func TestBadConfigExitsBeforeTouchingZooKeeper(t *testing.T) {
	// No ZooKeeper runs at this address: a nimbus that tried to connect
	// would hang for the connection timeout; a bad config must fail first.
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--nimbus.grpc.port", "70000"}, "nimbus.grpc.port"},
		{[]string{"--storm.zookeeper.root", "storm"}, "storm.zookeeper.root"},
		{[]string{"--storm.zookeeper.session.timeout", "soon"}, "storm.zookeeper.session.timeout"},
		{[]string{"--config", "/nonexistent/storm.yaml"}, "/nonexistent/storm.yaml"},
	}
	for _, tc := range cases {
		args := append([]string{"--storm.zookeeper.servers", "127.0.0.1:1", "--storm.zookeeper.connection.timeout", "60s"}, tc.args...)
		var errOut bytes.Buffer
		cmd := exec.Command(testcluster.Bin(t).Path("nimbus"), args...)
		cmd.Stderr = &errOut
		err := cmd.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() == 0 {
			t.Fatalf("%v: err %v, want a non-zero exit", tc.args, err)
		}
		if !strings.Contains(errOut.String(), tc.want) {
			t.Fatalf("%v: stderr %q does not name %q", tc.args, errOut.String(), tc.want)
		}
	}
}

func TestStormctlTopologyLifecycle(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(4*time.Second))
	ps := c.StartNimbuses(t, 2)
	c.WaitLeader(t, ps, 10*time.Second)
	seeds := ps[0].Addr() + "," + ps[1].Addr()
	artifact := filepath.Join(t.TempDir(), "topology.bin")
	if err := os.WriteFile(artifact, randomBytes(t, 300<<10), 0o755); err != nil {
		t.Fatal(err)
	}

	out, errOut, code := stormctl(t, "--seeds", seeds, "submit", "clicount", artifact,
		"--workers", "2", "--component", "spout=2", "--component", "bolt=4", "--conf", "topology.debug=true")
	if code != 0 || !strings.Contains(out, "clicount-") {
		t.Fatalf("submit: exit %d\n%s%s", code, out, errOut)
	}
	out, _, code = stormctl(t, "--seeds", seeds, "list")
	if code != 0 || !strings.Contains(out, "clicount") || !strings.Contains(out, "active") {
		t.Fatalf("list: exit %d\n%s", code, out)
	}
	out, _, code = stormctl(t, "--seeds", seeds, "topology", "clicount", "-o", "json")
	var info struct {
		Topology struct {
			NumExecutors int `json:"numExecutors"`
		} `json:"topology"`
		Replicas []struct{} `json:"replicas"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &info) != nil || info.Topology.NumExecutors != 6 || len(info.Replicas) < 1 {
		t.Fatalf("topology -o json: exit %d\n%s", code, out)
	}
	if _, errOut, code := stormctl(t, "--seeds", seeds, "submit", "clicount", artifact, "--component", "c=1"); code != 5 || !strings.Contains(errOut, "topology name in use") {
		t.Fatalf("duplicate submit: exit %d, stderr %q", code, errOut)
	}
	if _, errOut, code := stormctl(t, "--seeds", seeds, "submit", "bad/name", artifact, "--component", "c=1"); code != 3 || !strings.Contains(errOut, "spec.name") {
		t.Fatalf("bad name: exit %d, stderr %q", code, errOut)
	}
	if _, _, code := stormctl(t, "--seeds", seeds, "deactivate", "clicount"); code != 0 {
		t.Fatalf("deactivate: exit %d", code)
	}
	if _, _, code := stormctl(t, "--seeds", seeds, "kill", "clicount", "--wait", "0"); code != 0 {
		t.Fatalf("kill: exit %d", code)
	}
	testcluster.WaitFor(t, 10*time.Second, "the topology gone", func() error {
		out, _, _ := stormctl(t, "--seeds", seeds, "list")
		if strings.Contains(out, "clicount") {
			return errors.New("still listed")
		}
		return nil
	})
	if _, errOut, code := stormctl(t, "--seeds", seeds, "kill", "clicount"); code != 4 || !strings.HasPrefix(errOut, "stormctl: kill clicount: topology not found") {
		t.Fatalf("kill of a removed topology: exit %d, stderr %q", code, errOut)
	}
}
