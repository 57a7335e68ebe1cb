package main

import (
	"net"
	"strings"
	"testing"

	"github.com/nimbusha/nimbus/internal/testkit/fakenimbus"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// What a new user hit on the command line.

// A mistyped command gets the command it was probably meant to be.
func TestUnknownCommandIsSuggested(t *testing.T) {
	code, _, stderr := runArgs("topolgy")
	if code != exitUsage || !strings.Contains(stderr, `unknown command "topolgy"; did you mean "topology"?`) {
		t.Fatalf("exit %d, stderr %q; want a usage error suggesting topology", code, stderr)
	}
	code, _, stderr = runArgs("frobnicate")
	if code != exitUsage || !strings.Contains(stderr, `unknown command "frobnicate"`) || strings.Contains(stderr, "did you mean") {
		t.Fatalf("exit %d, stderr %q; want a usage error without a suggestion", code, stderr)
	}
}

// Help lists --seeds, not its alias --nimbus.seeds, which still works.
func TestHelpListsOneSeedsFlag(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"list", "--help"}, {"submit", "--help"}} {
		_, stdout, _ := runArgs(args...)
		if !strings.Contains(stdout, "--seeds") || strings.Contains(stdout, "--nimbus.seeds") {
			t.Errorf("%q: want --seeds and not --nimbus.seeds in\n%s", args, stdout)
		}
	}
	addr := serve(t, testCluster())
	runOK(t, "--nimbus.seeds", addr, "nimbuses")
}

// submit's example names the example topology's components.
func TestSubmitExampleNamesTheExampleComponents(t *testing.T) {
	_, stdout, _ := runArgs("submit", "--help")
	if strings.Contains(stdout, "sentences=") || !strings.Contains(stdout, "--component split=2") {
		t.Fatalf("submit --help example:\n%s", stdout)
	}
}

// kill and rebalance without --wait say the seconds the server will
// wait: the topology's topology.message.timeout.secs.
func TestKillSaysTheSeconds(t *testing.T) {
	addr, f := leaderWith(t, nil)
	f.OnGetTopologyConf = func(req *nimbusv1.GetTopologyConfRequest) (*nimbusv1.GetTopologyConfResponse, error) {
		return &nimbusv1.GetTopologyConfResponse{Entries: []*nimbusv1.ConfEntry{
			{Key: "topology.message.timeout.secs", Value: "45", Source: "topology"},
		}}, nil
	}
	if got := runOK(t, "--seeds", addr, "kill", "wordcount"); got != "killed wordcount (removal in 45s)\n" {
		t.Errorf("kill: %q", got)
	}
	if got := runOK(t, "--seeds", addr, "rebalance", "wordcount"); got != "rebalancing wordcount (rescheduling in 45s)\n" {
		t.Errorf("rebalance: %q", got)
	}
	checkRequests(t, f, &nimbusv1.KillTopologyRequest{Name: "wordcount"}, &nimbusv1.RebalanceTopologyRequest{Name: "wordcount"})
}

// A seed that is not registered (a stopped nimbus) is listed as offline,
// as the REST API and the UI list it.
func TestNimbusesListsStoppedSeedOffline(t *testing.T) {
	addr := serve(t, testCluster())
	lis, stopped := fakenimbus.Listen(t)
	lis.Close() // nothing answers there
	out := runOK(t, "--seeds", addr+","+stopped, "nimbuses")
	host, port, _ := net.SplitHostPort(stopped)
	var row []string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[0] == host && f[1] == port {
			row = f
		}
	}
	if len(row) < 3 || row[2] != "offline" {
		t.Fatalf("no offline row for %s in\n%s", stopped, out)
	}
	if strings.Contains(out, addr+" ") {
		t.Fatalf("the answering seed listed as offline:\n%s", out)
	}
}
