package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/nimbusha/nimbus/internal/testkit/fakenimbus"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	"github.com/nimbusha/nimbus/internal/version"
)

func TestVersionFlag(t *testing.T) {
	if got, want := runOK(t, "--version"), version.String("stormctl")+"\n"; got != want {
		t.Errorf("--version printed %q, want %q", got, want)
	}
}

// The server's version is the leader's, from GetLeader.
func TestVersionCommand(t *testing.T) {
	addr := serve(t, testCluster())
	want := "client: " + version.String("stormctl") + "\n" +
		"server: 0.1.0 (leader nimbus-1.example.com:6627)\n"
	if got := runOK(t, "--seeds", addr, "version"); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}

	var doc map[string]string
	out := runOK(t, "--seeds", addr, "-o", "json", "version")
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("version -o json: %v\n%s", err, out)
	}
	if doc["clientVersion"] != version.Version || doc["serverVersion"] != "0.1.0" || doc["serverAddress"] != "nimbus-1.example.com:6627" {
		t.Errorf("version -o json = %v", doc)
	}
}

// A leader that names no version is shown as unknown, not guessed.
func TestVersionOfALeaderThatDoesNotSay(t *testing.T) {
	addr := serveLeader(t, &fakenimbus.Server{})
	out := runOK(t, "--seeds", addr, "version")
	if want := "server: unknown (leader " + addr + ")\n"; !strings.HasSuffix(out, want) {
		t.Errorf("got:\n%s\nwant it to end with %q", out, want)
	}
}

// --client asks nobody; without it, a cluster that does not answer still
// gets the client's version shown, then the reason, and exit 1.
func TestVersionWithoutAServer(t *testing.T) {
	closed := testcluster.ClosedAddr(t)
	clientLine := "client: " + version.String("stormctl") + "\n"
	if got := runOK(t, "--seeds", closed, "version", "--client"); got != clientLine {
		t.Errorf("version --client printed %q, want %q", got, clientLine)
	}

	code, stdout, stderr := runArgs("--seeds", closed, "--timeout", "5s", "version")
	if code != exitUnavailable || stdout != clientLine {
		t.Errorf("exit %d, stdout %q; want %d and the client's line", code, stdout, exitUnavailable)
	}
	if want := "stormctl: version: no nimbus answered at " + closed + " (connection refused)\n"; stderr != want {
		t.Errorf("stderr %q, want %q", stderr, want)
	}
}

// An unknown flag is a usage error that names the flag it is close to.
func TestUnknownFlagSuggestsTheClosest(t *testing.T) {
	for args, want := range map[string]string{
		"--seed x leader":        "stormctl: unknown flag: --seed (did you mean --seeds?) (see 'stormctl --help')\n",
		"leader --outptu json":   "stormctl: unknown flag: --outptu (did you mean --output?) (see 'stormctl --help')\n",
		"-seeds x leader":        "stormctl: unknown shorthand flag: 's' in -seeds (did you mean --seeds?) (see 'stormctl --help')\n",
		"version --clinet":       "stormctl: unknown flag: --clinet (did you mean --client?) (see 'stormctl --help')\n",
		"--no-such-thing leader": "stormctl: unknown flag: --no-such-thing (see 'stormctl --help')\n",
	} {
		if got := runFails(t, exitUsage, strings.Fields(args)...); got != want {
			t.Errorf("%s: stderr %q, want %q", args, got, want)
		}
	}
}
