package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/nimbusha/nimbus/client"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func testSpec(name string) *nimbusv1.TopologySpec {
	return &nimbusv1.TopologySpec{
		Name:          name,
		NumWorkers:    2,
		Components:    []*nimbusv1.ComponentSpec{{Id: "spout", Parallelism: 2}, {Id: "bolt", Parallelism: 3}},
		WorkerCommand: []string{"{code_dir}/artifact", "--port", "{port}"},
		Owner:         "tester",
	}
}

// newClient is an SDK client of c's nimbuses ps, as c's own clients dial
// (with security on, TLS as the admin).
func newClient(t *testing.T, c *testcluster.Cluster, ps ...*testcluster.Process) *client.Client {
	t.Helper()
	cl, err := client.New(testcluster.Addrs(ps...), client.WithTransportCredentials(c.Credentials(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

func submit(t *testing.T, cl *client.Client, name string, data []byte) *nimbusv1.SubmitTopologyResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	resp, err := cl.SubmitTopology(ctx, testSpec(name), bytes.NewReader(data), int64(len(data)), nil)
	if err != nil {
		t.Fatalf("submit %s: %v", name, err)
	}
	return resp
}

// holds checks that p's local store has the topology's artifact, intact.
func holds(p *testcluster.Process, id string, data []byte) error {
	got, err := os.ReadFile(filepath.Join(p.LocalDir, "nimbus", "code", id, "artifact"))
	if err != nil {
		return fmt.Errorf("%s: %w", p.Name, err)
	}
	if sha256.Sum256(got) != sha256.Sum256(data) {
		return fmt.Errorf("%s holds a different artifact for %s", p.Name, id)
	}
	return nil
}

// holdsNothing checks that p's store has no code of id and no temp files.
func holdsNothing(p *testcluster.Process, id string) error {
	if _, err := os.Stat(filepath.Join(p.LocalDir, "nimbus", "code", id)); !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s still has code of %s", p.Name, id)
	}
	return nil
}

func clusterSummary(t *testing.T, c *testcluster.Cluster, p *testcluster.Process) *nimbusv1.ClusterSummary {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	resp, err := c.API(p).GetClusterInfo(ctx, &nimbusv1.GetClusterInfoRequest{})
	if err != nil {
		t.Fatalf("%s: GetClusterInfo: %v", p.Name, err)
	}
	return resp.GetCluster()
}

// zkChildren lists a path's children through conn, a client of the
// test's own, retrying errors for up to 10 s.
func zkChildren(t *testing.T, conn *zk.Conn, path string) []string {
	t.Helper()
	var children []string
	testcluster.WaitFor(t, 10*time.Second, "a ZooKeeper read of "+path, func() error {
		var err error
		children, _, err = conn.Children(path)
		return err
	})
	return children
}

// orphanTopology leaves a cluster where no nimbus may lead: nimbus a
// leads, b is queued but stopped (SIGSTOP) while a accepts a submission of
// name (data), then a is killed and b resumed. b lacks the topology's
// code, which nobody else holds. It returns the cluster, a (stopped, for
// its local dir), b and the topology's id.
func orphanTopology(t *testing.T, name string, data []byte) (c *testcluster.Cluster, a, b *testcluster.Process, id string) {
	t.Helper()
	z := testcluster.StartZooKeeper(t)
	c = testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(3*time.Second))
	a = c.StartNimbuses(t, 1)[0]
	c.WaitLeader(t, []*testcluster.Process{a}, 10*time.Second)
	b = c.StartNimbuses(t, 1)[0]
	c.WaitQueued(t, 2, 10*time.Second)
	if err := b.Signal(syscall.SIGSTOP); err != nil { // b misses the submission
		t.Fatal(err)
	}
	id = submit(t, newClient(t, c, a), name, data).GetTopologyId()
	if err := a.Stop(syscall.SIGKILL, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := b.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	return c, a, b, id
}
