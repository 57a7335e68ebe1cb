package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// How clients meet a secure cluster: without a certificate, and with the
// TLS keys as stormctl flags.

// A caller without a client certificate (a TLS client that trusts the
// cluster and presents none) reaches the interceptors and is answered
// Unauthenticated, and its mutating request leaves an audit line (principal
// anonymous), as package auth's doc and tests say. (A TLS refusal would be
// Unavailable, which the SDK retries for its whole leader budget.)
func TestSecureCallerWithoutCertificateIsUnauthenticated(t *testing.T) {
	sec := testcluster.NewSecurity(t)
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSecurity(sec))
	ps := c.StartNimbuses(t, 1)
	_, leader := c.WaitLeader(t, ps, 15*time.Second)
	api := c.APIAs(leader, sec.Anonymous())
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err := api.GetLeader(ctx, &nimbusv1.GetLeaderRequest{})
	if status.Code(err) != codes.Unauthenticated {
		t.Errorf("GetLeader without a client certificate: %v, want Unauthenticated", err)
	}
	_, err = api.KillTopology(ctx, &nimbusv1.KillTopologyRequest{Name: "alicejob"})
	if status.Code(err) != codes.Unauthenticated {
		t.Errorf("KillTopology without a client certificate: %v, want Unauthenticated", err)
	}
	// The log reaches its file through the harness, a moment after the answer.
	testcluster.WaitFor(t, 5*time.Second, "the audit line of the anonymous kill", func() error {
		if got := audits(t, leader); !slices.Contains(got, "anonymous kill alicejob Unauthenticated") {
			return fmt.Errorf("the leader's audit lines: %q", got)
		}
		return nil
	})
}

// stormctl takes the TLS keys as flags (configs.ClientFlagKeys), as it
// takes them from --config and STORM_* (cobra parses a subcommand's line
// into the subcommand's own flag set: configs.Load must see them set).
func TestStormctlTLSFlags(t *testing.T) {
	sec := testcluster.NewSecurity(t)
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSecurity(sec))
	ps := c.StartNimbuses(t, 1)
	_, leader := c.WaitLeader(t, ps, 15*time.Second)
	alice := sec.Client(t, "alice")

	env := []string{"STORM_NIMBUS_GRPC_TLS_ENABLE=true", "STORM_NIMBUS_GRPC_TLS_TRUSTSTORE_PATH=" + alice.Truststore,
		"STORM_NIMBUS_GRPC_TLS_CERT_PATH=" + alice.Cert, "STORM_NIMBUS_GRPC_TLS_KEY_PATH=" + alice.Key}
	out, errOut, code := stormctlEnv(t, env, "--seeds", leader.Addr(), "leader")
	if code != 0 || !strings.Contains(out, leader.Addr()[strings.LastIndex(leader.Addr(), ":")+1:]) {
		t.Errorf("stormctl leader, TLS from STORM_*: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = stormctl(t, append(append([]string{"--seeds", leader.Addr()}, alice.ClientFlags()...), "leader")...)
	if code != 0 {
		t.Errorf("stormctl leader, TLS from flags: exit %d\n%s%s", code, out, errOut)
	}
}

// stormctlEnv is stormctl with env added to the test's environment.
func stormctlEnv(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := exec.Command(testcluster.Bin(t).Path("stormctl"), append([]string{"--timeout", "5s"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
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
