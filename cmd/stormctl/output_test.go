package main

import (
	"bytes"
	"strings"
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
			{Host: "nimbus-1.example.com", Port: 6627, UptimeSecs: 192, IsLeader: true, Epoch: 7, Version: "0.1.0", Release: "0.1", HoldsAllCode: true},
			{Host: "nimbus-2", Port: 16627, UptimeSecs: 18180, MissingTopologyIds: []string{"a-1-1", "b-2-2"}},
			{Host: "nimbus-3", Port: 6627, UptimeSecs: 5},
		},
		ClusterVersion: "0.1",
		Supervisors: []*nimbusv1.SupervisorSummary{
			{SupervisorId: "a1b2", Host: "worker-1", UptimeSecs: 190800, NumWorkers: 4, NumUsedWorkers: 2, Version: "0.2.0-rc1", Release: "0.2"},
		},
	}
}

func TestWriteNimbuses(t *testing.T) {
	var b bytes.Buffer
	if err := writeNimbuses(&b, testCluster().GetNimbuses()); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"HOST                  PORT   LEADER  EPOCH  ELIGIBLE        UPTIME  VERSION  RELEASE\n" +
		"nimbus-1.example.com  6627   yes     7      yes             3m12s   0.1.0    0.1\n" +
		"nimbus-2              16627  no      -      no (missing 2)  5h3m    -        -\n" +
		"nimbus-3              6627   no      -      no              5s      -        -\n"
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
		"HOST                  PORT   LEADER  EPOCH  ELIGIBLE        UPTIME  VERSION  RELEASE\n" +
		"nimbus-1.example.com  6627   yes     7      yes             3m12s   0.1.0    0.1\n" +
		"nimbus-2              16627  no      -      no (missing 2)  5h3m    -        -\n" +
		"nimbus-3              6627   no      -      no              5s      -        -\n" +
		"eligible standbys: 0\n" +
		"cluster version: 0.1\n" +
		"\n" +
		"SUPERVISORS\n" +
		"(none)\n" +
		"\n" +
		"TOPOLOGIES\n" +
		"NAME       ID                      STATUS  WORKERS  EXECUTORS  REPLICAS  UPTIME  OWNER\n" +
		"wordcount  wordcount-1-1700000000  active  0/0      6          3         45s     alice\n"
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestWriteClusterLeadershipBlocked(t *testing.T) {
	s := testCluster()
	s.EligibleStandbys = 2
	s.LeadershipBlockedBy = []string{"a-1-1", "b-2-2"}
	var b bytes.Buffer
	if err := writeCluster(&b, s); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"nimbus-3              6627   no      -      no              5s      -        -\n" +
		"eligible standbys: 2\n" +
		"cluster version: 0.1\n" +
		"WARNING: no live nimbus holds: a-1-1, b-2-2 — no failover possible until one does (see README: \"Leadership blocked\")\n" +
		"\n" +
		"SUPERVISORS\n"
	if !strings.Contains(b.String(), want) {
		t.Errorf("got:\n%s\nwant it to contain:\n%s", b.String(), want)
	}
}

func TestWriteTopologies(t *testing.T) {
	var b bytes.Buffer
	err := writeTopologyList(&b, []*nimbusv1.TopologySummary{
		{Id: "wordcount-1-1700000000", Name: "wordcount", Status: clusterv1.TopologyStatus_TOPOLOGY_STATUS_REBALANCING,
			Owner: "alice", NumExecutors: 6, NumWorkers: 2, NumWorkersAssigned: 2, NumWorkersRunning: 2, UptimeSecs: 3700, ReplicationCount: 3},
		{Id: "x-2-1700000001", Name: "x", Status: clusterv1.TopologyStatus_TOPOLOGY_STATUS_INACTIVE},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "" +
		"NAME       ID                      STATUS       WORKERS  EXECUTORS  REPLICAS  UPTIME  OWNER\n" +
		"wordcount  wordcount-1-1700000000  rebalancing  2/2      6          3         1h1m    alice\n" +
		"x          x-2-1700000001          inactive     0/0      0          0         0s      -\n"
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestWriteSupervisors(t *testing.T) {
	var b bytes.Buffer
	if err := writeSupervisorList(&b, testCluster().GetSupervisors()); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"ID    HOST      UPTIME  SLOTS  USED  BACKOFF  VERSION    RELEASE\n" +
		"a1b2  worker-1  2d5h    4      2     0        0.2.0-rc1  0.2\n"
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}
