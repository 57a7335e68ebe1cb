package main

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// closedAddr returns an address where nothing listens.
func closedAddr(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	return addr
}

// fakeNimbus answers the read RPCs from a fixed cluster.
type fakeNimbus struct {
	nimbusv1.UnimplementedNimbusServiceServer
	cluster *nimbusv1.ClusterSummary
}

func (f *fakeNimbus) GetLeader(context.Context, *nimbusv1.GetLeaderRequest) (*nimbusv1.GetLeaderResponse, error) {
	return &nimbusv1.GetLeaderResponse{Leader: f.cluster.GetNimbuses()[0]}, nil
}

func (f *fakeNimbus) GetClusterInfo(context.Context, *nimbusv1.GetClusterInfoRequest) (*nimbusv1.GetClusterInfoResponse, error) {
	return &nimbusv1.GetClusterInfoResponse{Cluster: f.cluster}, nil
}

// serve starts a fake nimbus until the test ends and returns its address.
func serve(t *testing.T, cluster *nimbusv1.ClusterSummary) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	nimbusv1.RegisterNimbusServiceServer(s, &fakeNimbus{cluster: cluster})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Serve(lis)
	}()
	t.Cleanup(func() {
		s.Stop()
		<-done
	})
	return lis.Addr().String()
}

func runArgs(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestRunUnreachableSeed(t *testing.T) {
	addr := closedAddr(t)
	code, stdout, stderr := runArgs("--seeds", addr, "--timeout", "5s", "leader")
	if code != exitError {
		t.Errorf("exit code %d, want %d", code, exitError)
	}
	if want := "stormctl: no nimbus answered at " + addr + " (connection refused)\n"; stderr != want {
		t.Errorf("stderr %q, want %q", stderr, want)
	}
	if stdout != "" {
		t.Errorf("stdout %q, want nothing", stdout)
	}
}

func TestRunSeedsFromEnv(t *testing.T) {
	addr := closedAddr(t)
	t.Setenv(seedsEnv, addr)
	_, _, stderr := runArgs("nimbuses")
	if want := "stormctl: no nimbus answered at " + addr + " (connection refused)\n"; stderr != want {
		t.Errorf("stderr %q, want %q", stderr, want)
	}
}

func TestRunUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"bogus"},
		{"--bogus", "leader"},
		{"leader", "extra"},
		{"-o", "yaml", "leader"},
		{"--timeout", "soon", "leader"},
		{"--timeout", "0s", "leader"},
		{"--seeds", "no-port", "leader"},
		{"--seeds", " , ", "leader"},
	} {
		code, stdout, stderr := runArgs(args...)
		if code != exitUsage {
			t.Errorf("%q: exit code %d, want %d", args, code, exitUsage)
		}
		if !strings.HasPrefix(stderr, "stormctl: ") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%q: stderr %q, want one line starting with stormctl:", args, stderr)
		}
		if stdout != "" {
			t.Errorf("%q: stdout %q, want nothing", args, stdout)
		}
	}
}

func TestRunHelp(t *testing.T) {
	code, stdout, _ := runArgs("--help")
	if code != exitOK || !strings.Contains(stdout, "nimbuses") {
		t.Errorf("--help: exit code %d, stdout %q", code, stdout)
	}
}

func TestRunTable(t *testing.T) {
	addr := serve(t, testCluster())
	code, stdout, stderr := runArgs("--seeds", closedAddr(t)+", "+addr, "leader")
	if code != exitOK {
		t.Fatalf("exit code %d, stderr %q", code, stderr)
	}
	want := "" +
		"HOST                  PORT  LEADER  EPOCH  UPTIME  VERSION\n" +
		"nimbus-1.example.com  6627  yes     7      3m12s   0.1.0\n"
	if stdout != want {
		t.Errorf("got:\n%s\nwant:\n%s", stdout, want)
	}
}

func TestRunJSON(t *testing.T) {
	cluster := testCluster()
	addr := serve(t, cluster)

	code, stdout, stderr := runArgs("--seeds", addr, "-o", "json", "cluster")
	if code != exitOK {
		t.Fatalf("cluster: exit code %d, stderr %q", code, stderr)
	}
	var got nimbusv1.GetClusterInfoResponse
	if err := protojson.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("cluster: output is not a GetClusterInfoResponse: %v\n%s", err, stdout)
	}
	if !proto.Equal(got.GetCluster(), cluster) {
		t.Errorf("cluster: got %v, want %v", &got, cluster)
	}

	code, stdout, stderr = runArgs("--seeds", addr, "--output=json", "nimbuses")
	if code != exitOK {
		t.Fatalf("nimbuses: exit code %d, stderr %q", code, stderr)
	}
	var nimbuses nimbusv1.ClusterSummary
	if err := protojson.Unmarshal([]byte(stdout), &nimbuses); err != nil {
		t.Fatalf("nimbuses: output is not JSON of nimbuses: %v\n%s", err, stdout)
	}
	if !proto.Equal(&nimbuses, &nimbusv1.ClusterSummary{Nimbuses: cluster.GetNimbuses()}) {
		t.Errorf("nimbuses: got %v", &nimbuses)
	}
	if !strings.Contains(stdout, "\n  \"nimbuses\": [\n") {
		t.Errorf("nimbuses: want indented JSON, got\n%s", stdout)
	}
}
