package integration

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// The example's topology file, submitted by the real stormctl to a real
// cluster, runs the topology it describes; a worker command with an
// unknown placeholder is refused by stormctl at its line of the file, and
// by the nimbus itself.
func TestSubmitTheExampleTopologyFile(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSessionTimeout(4*time.Second))
	ps := c.StartNimbuses(t, 1)
	c.WaitLeader(t, ps, 10*time.Second)
	sups := c.StartSupervisors(t, 1) // two slots: one per worker of the file
	conn := testcluster.ConnectZooKeeper(t, 5*time.Second, z.Addr())
	cl := newClient(t, c, ps...)
	ctl := func(args ...string) (stdout, stderr string, code int) {
		return stormctl(t, append(append(c.ClientFlags(), "--seeds", ps[0].Addr()), args...)...)
	}
	worker := testcluster.Bin(t).Path("wordcount")

	// A typo in the file: refused before anything is sent.
	typo := filepath.Join(t.TempDir(), "typo.yaml")
	if err := os.WriteFile(typo, []byte("name: typo\nspouts: [{id: s}]\nworkerCommand: '{code_dir}/artifact --port {prot}'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := ctl("submit", "-f", typo, worker)
	if code != 2 || !strings.Contains(errOut, typo+`:3: workerCommand: unknown placeholder "{prot}"`) {
		t.Fatalf("submit -f %s: exit %d, stderr %q; want 2, naming the line and the placeholder", typo, code, errOut)
	}
	// The nimbus refuses it too, from any client, naming the field.
	spec := &nimbusv1.TopologySpec{
		Name: "typo", NumWorkers: 1, Components: []*nimbusv1.ComponentSpec{{Id: "s", Parallelism: 1}},
		WorkerCommand: []string{"{code_dir}/artifact", "--port", "{prot}"},
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, err := cl.SubmitTopology(ctx, spec, bytes.NewReader([]byte("x")), 1, nil)
	if field := badField(err); status.Code(err) != codes.InvalidArgument || field != "spec.worker_command[2]" {
		t.Fatalf("submitting {prot} through the SDK: %v (field %q); want InvalidArgument naming spec.worker_command[2]", err, field)
	}
	if _, err := cl.GetTopologyInfo(ctx, "typo"); status.Code(err) != codes.NotFound {
		t.Fatalf("the refused topology: GetTopologyInfo says %v, want NotFound", err)
	}

	// The example's file, with the worker testcluster built as ARTIFACT.
	file := filepath.Join("..", "examples", "wordcount", "topology.yaml")
	if out, errOut, code := ctl("submit", "-f", file, worker); code != 0 {
		t.Fatalf("submit -f %s: exit %d\n%s%s", file, code, out, errOut)
	}
	out, _, code := ctl("list")
	if code != 0 || !strings.Contains(out, "wordcount") {
		t.Fatalf("list: exit %d\n%s", code, out)
	}
	info, err := cl.GetTopologyInfo(ctx, "wordcount")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int32{"sentence": 1, "split": 2, "count": 3}
	got := info.GetComponentParallelism()
	if len(got) != len(want) || got["sentence"] != 1 || got["split"] != 2 || got["count"] != 3 {
		t.Errorf("component parallelism %v, want the file's %v", got, want)
	}
	if n := info.GetTopology().GetNumWorkers(); n != 2 {
		t.Errorf("%d workers, want the file's topology.workers 2", n)
	}
	// The file's worker command runs: both workers answer on their slots.
	waitWorkers(t, conn, info.GetTopology().GetId(), 2, 30*time.Second, sups...)
}

// badField is the field a BadRequest detail of err names, or "".
func badField(err error) string {
	st, _ := status.FromError(err)
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok && len(br.GetFieldViolations()) > 0 {
			return br.GetFieldViolations()[0].GetField()
		}
	}
	return ""
}
