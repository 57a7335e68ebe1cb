package main

import (
	"bytes"
	"testing"

	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

func TestUptime(t *testing.T) {
	for secs, want := range map[int64]string{
		0: "0s", 59: "59s", 192: "3m12s", 3600: "1h0m", 18180: "5h3m",
		190800: "2d5h", -1: "-",
	} {
		if got := uptime(secs); got != want {
			t.Errorf("uptime(%d) = %q, want %q", secs, got, want)
		}
	}
}

func testCluster() *nimbusv1.ClusterSummary {
	return &nimbusv1.ClusterSummary{
		Nimbuses: []*nimbusv1.NimbusSummary{
			{Host: "nimbus-1.example.com", Port: 6627, UptimeSecs: 192, IsLeader: true, Epoch: 7, Version: "0.1.0"},
			{Host: "nimbus-2", Port: 16627, UptimeSecs: 18180},
		},
		Supervisors: []*nimbusv1.SupervisorSummary{
			{SupervisorId: "a1b2", Host: "worker-1", UptimeSecs: 190800, NumWorkers: 4, NumUsedWorkers: 2, Version: "0.1.0"},
		},
	}
}

func TestWriteNimbuses(t *testing.T) {
	var b bytes.Buffer
	if err := writeNimbuses(&b, testCluster().GetNimbuses()); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"HOST                  PORT   LEADER  EPOCH  UPTIME  VERSION\n" +
		"nimbus-1.example.com  6627   yes     7      3m12s   0.1.0\n" +
		"nimbus-2              16627  no      -      5h3m    -\n"
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestWriteCluster(t *testing.T) {
	s := testCluster()
	s.Topologies = []*nimbusv1.TopologySummary{{
		Id: "wordcount-1-1700000000", Name: "wordcount", Status: clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE,
		Owner: "alice", NumExecutors: 6, NumWorkers: 2, UptimeSecs: 45, ReplicationCount: 3,
	}}
	s.Supervisors = nil
	var b bytes.Buffer
	if err := writeCluster(&b, s); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"NIMBUSES\n" +
		"HOST                  PORT   LEADER  EPOCH  UPTIME  VERSION\n" +
		"nimbus-1.example.com  6627   yes     7      3m12s   0.1.0\n" +
		"nimbus-2              16627  no      -      5h3m    -\n" +
		"\n" +
		"SUPERVISORS\n" +
		"(none)\n" +
		"\n" +
		"TOPOLOGIES\n" +
		"NAME       ID                      STATUS  OWNER  WORKERS  EXECUTORS  REPLICAS  UPTIME\n" +
		"wordcount  wordcount-1-1700000000  ACTIVE  alice  2        6          3         45s\n"
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestWriteSupervisors(t *testing.T) {
	var b bytes.Buffer
	if err := writeSupervisors(&b, testCluster().GetSupervisors()); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"ID    HOST      UPTIME  SLOTS  USED  VERSION\n" +
		"a1b2  worker-1  2d5h    4      2     0.1.0\n"
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}
