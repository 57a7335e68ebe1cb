package main

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// config shows the nimbus's configuration as the nimbus answers it, as a
// table under the nimbus's name or as JSON; --nimbus picks the nimbus; a
// refusal exits "denied".
func TestRunConfig(t *testing.T) {
	conf := &nimbusv1.GetNimbusConfigResponse{Nimbus: "n1:6627", Entries: []*nimbusv1.ConfEntry{
		{Key: "nimbus.admins", Value: "ada,bob", Source: "/etc/storm/storm.yaml:4"},
		{Key: "nimbus.grpc.port", Value: "6627", Source: "--nimbus.grpc.port"},
		{Key: "storm.zookeeper.auth.payload", Value: "<redacted>", Source: "STORM_ZOOKEEPER_AUTH_PAYLOAD", Redacted: true},
		{Key: "storm.zookeeper.session.timeout", Value: "20s", Source: "default"},
	}}
	fake := reader(testCluster(), nil)
	fake.OnGetNimbusConfig = func() (*nimbusv1.GetNimbusConfigResponse, error) { return conf, nil }
	addr := fake.Start(t)

	got := runOK(t, "--seeds", addr, "config")
	want := "" +
		"NIMBUS n1:6627\n" +
		"KEY                              VALUE       SOURCE\n" +
		"nimbus.admins                    ada,bob     /etc/storm/storm.yaml:4\n" +
		"nimbus.grpc.port                 6627        --nimbus.grpc.port\n" +
		"storm.zookeeper.auth.payload     <redacted>  STORM_ZOOKEEPER_AUTH_PAYLOAD\n" +
		"storm.zookeeper.session.timeout  20s         default\n"
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	var resp nimbusv1.GetNimbusConfigResponse
	unmarshal(t, runOK(t, "--seeds", addr, "-o", "json", "config"), &resp)
	if !proto.Equal(&resp, conf) {
		t.Errorf("json: got %v, want %v", &resp, conf)
	}

	// --nimbus asks that nimbus, not the seeds.
	before := fake.Calls("GetNimbusConfig")
	if got := runOK(t, "--seeds", "127.0.0.1:1", "config", "--nimbus", addr); !strings.HasPrefix(got, "NIMBUS n1:6627\n") {
		t.Errorf("--nimbus: got %q", got)
	}
	if fake.Calls("GetNimbusConfig") != before+1 {
		t.Error("--nimbus did not ask the nimbus named")
	}

	denied := reader(testCluster(), nil)
	denied.OnGetNimbusConfig = func() (*nimbusv1.GetNimbusConfigResponse, error) {
		return nil, status.Error(codes.PermissionDenied, "nimbus: permission denied: eve may not read the nimbus configuration: not in nimbus.admins")
	}
	if code, _, stderr := runArgs("--seeds", denied.Start(t), "config"); code != exitDenied || !strings.Contains(stderr, "nimbus.admins") {
		t.Errorf("refused: exit %d, stderr %q; want %d naming nimbus.admins", code, stderr, exitDenied)
	}
	if code, _, _ := runArgs("--seeds", addr, "config", "extra"); code != exitUsage {
		t.Errorf("an argument: exit %d, want %d", code, exitUsage)
	}
}
