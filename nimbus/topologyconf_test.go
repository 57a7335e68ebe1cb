package nimbus

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nimbusha/nimbus/client"
	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

func TestEffectiveConf(t *testing.T) {
	cfg := configs.Default()
	spec := &nimbusv1.TopologySpec{NumWorkers: 3, Config: map[string]string{
		"topology.message.timeout.secs": "5", "db.password": "hunter2", "topology.debug": "true",
	}}
	want := map[string][3]string{ // value, source, redacted
		"db.password":                            {"<redacted>", "topology", "true"},
		"topology.debug":                         {"true", "topology", "false"},
		"topology.max.replication.wait.time.sec": {"60", "nimbus", "false"},
		"topology.message.timeout.secs":          {"5", "topology", "false"},
		"topology.min.replication.count":         {"1", "nimbus", "false"},
		"topology.workers":                       {"3", "spec.num_workers", "false"},
	}
	got := effectiveConf(cfg, spec)
	if len(got) != len(want) {
		t.Fatalf("got %v, want %d entries", got, len(want))
	}
	for i, e := range got {
		if i > 0 && got[i-1].GetKey() >= e.GetKey() {
			t.Errorf("not sorted: %q before %q", got[i-1].GetKey(), e.GetKey())
		}
		w := want[e.GetKey()]
		if e.GetValue() != w[0] || e.GetSource() != w[1] || (e.GetRedacted() != (w[2] == "true")) {
			t.Errorf("%s: got %q from %q (redacted %v), want %v", e.GetKey(), e.GetValue(), e.GetSource(), e.GetRedacted(), w)
		}
	}
}

func TestSettingsOf(t *testing.T) {
	cfg := configs.Default()
	if set := settingsOf(cfg, nil); set.messageTimeout != 30*time.Second || set.minReplication != 1 || set.maxReplicationWait != time.Minute || set.waitForever {
		t.Errorf("defaults: %+v", set)
	}
	set := settingsOf(cfg, map[string]string{
		"topology.message.timeout.secs": "7", "topology.min.replication.count": "3", "topology.max.replication.wait.time.sec": "-1",
	})
	if set.messageTimeout != 7*time.Second || set.minReplication != 3 || !set.waitForever {
		t.Errorf("from the conf: %+v", set)
	}
}

// submitConf submits a topology with conf through cl.
func submitConf(t *testing.T, cl *client.Client, name string, conf map[string]string) (*nimbusv1.SubmitTopologyResponse, error) {
	t.Helper()
	spec := &nimbusv1.TopologySpec{
		Name: name, NumWorkers: 1, WorkerCommand: []string{"{code_dir}/artifact"}, Config: conf,
		Components: []*nimbusv1.ComponentSpec{{Id: "spout", Parallelism: 1}},
	}
	artifact := []byte("#!/bin/sh\nexit 0\n")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	return cl.SubmitTopology(ctx, spec, bytes.NewReader(artifact), int64(len(artifact)), nil)
}

// The topology's conf, not the nimbus's, sets the replication a submission
// waits for and the wait of a kill without wait_secs; a bad topology.*
// value is refused, naming the key, with nothing stored; the effective
// conf is shown with secrets redacted.
func TestInProcessTopologyConfIsHonoured(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	s := startWith(t, z.Addr(), t.TempDir(), func(c *configs.Config) {
		c.TopologyMessageTimeout = 600 * time.Second // a kill without its own timeout would wait this
		c.MaxReplicationWaitSecs = 600               // a wait for replicas that never come would time the test out
	})
	awaitLeading(t, s)
	cl := sdk(t, s)

	// One nimbus, two replicas asked for, one second allowed: the answer
	// comes after the topology's wait (not the nimbus's 600 s) with 1.
	resp, err := submitConf(t, cl, "confd", map[string]string{
		"topology.min.replication.count": "2", "topology.max.replication.wait.time.sec": "1",
		"topology.message.timeout.secs": "42", "db.password": "hunter2",
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetReplicationCount() != 1 || !resp.GetReplicationWaitTimedOut() {
		t.Fatalf("answer %v; want 1 replica, the wait timed out", resp)
	}

	conf, err := cl.GetTopologyConf(t.Context(), "confd")
	if err != nil {
		t.Fatal(err)
	}
	shown := map[string]*nimbusv1.ConfEntry{}
	for _, e := range conf.GetEntries() {
		shown[e.GetKey()] = e
	}
	if e := shown["db.password"]; e.GetValue() != "<redacted>" || !e.GetRedacted() {
		t.Errorf("db.password shown as %v", e)
	}
	if e := shown["topology.message.timeout.secs"]; e.GetValue() != "42" || e.GetSource() != "topology" {
		t.Errorf("topology.message.timeout.secs shown as %v", e)
	}
	if conf.GetTopologyId() != resp.GetTopologyId() {
		t.Errorf("id %q, want %q", conf.GetTopologyId(), resp.GetTopologyId())
	}

	before := time.Now()
	if err := cl.KillTopology(t.Context(), &nimbusv1.KillTopologyRequest{Name: "confd"}); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	base, err := storm(t, s, resp.GetTopologyId())
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.UnixMilli(base.GetActionDeadlineUnixMs())
	if deadline.Before(before.Add(42*time.Second).Truncate(time.Millisecond)) || deadline.After(after.Add(42*time.Second)) {
		t.Errorf("kill deadline %v, want 42 s after the kill (%v..%v)", deadline, before, after)
	}

	// A bad value: InvalidArgument naming the key; nothing stored.
	_, err = submitConf(t, cl, "badconf", map[string]string{"topology.message.timeout.secs": "abc"})
	var se interface{ GRPCStatus() *status.Status }
	if !errors.As(err, &se) || se.GRPCStatus().Code() != codes.InvalidArgument ||
		se.GRPCStatus().Message() != `spec.config["topology.message.timeout.secs"]: "abc" is not an integer` {
		t.Fatalf("bad conf: %v; want InvalidArgument naming the key", err)
	}
	if _, err := cl.GetTopologyInfo(t.Context(), "badconf"); status.Code(err) != codes.NotFound {
		t.Errorf("badconf: %v, want NotFound", err)
	}
	if ids, err := s.store.IDs(); err != nil || len(ids) != 1 {
		t.Errorf("store holds %v (%v), want only confd's code", ids, err)
	}
}
