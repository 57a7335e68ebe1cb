package integration

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// supervisorCodePort: a supervisor serves the code it runs, read-only, to
// nimbus.daemon.users and admins only: not to the topology's owner, not to
// a stranger, not without a certificate.
func (s *secureCluster) supervisorCodePort(t *testing.T) {
	ctx := t.Context()
	alice := s.sec.Client(t, "alice")
	spec := sleepSpec("supjob", 1)
	spec.Owner = "alice"
	resp, err := sdkClient(t, alice, s.nimbuses...).SubmitTopology(ctx, spec, strings.NewReader("code"), 4, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := resp.GetTopologyId()
	defer func() {
		zero := int32(0)
		if err := sdkClient(t, alice, s.nimbuses...).KillTopology(ctx, &nimbusv1.KillTopologyRequest{Name: "supjob", WaitSecs: &zero}); err != nil {
			t.Errorf("kill supjob: %v", err)
		}
	}()
	info, err := supervisorInfo(t, s.zk, s.sup.ID())
	if err != nil || info.GetCodePort() == 0 {
		t.Fatalf("the supervisor registers no code port (%v): %v", err, info)
	}
	addr := net.JoinHostPort(info.GetHost(), strconv.Itoa(int(info.GetCodePort())))
	meta := func(id testcluster.Identity, topology string) error {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, err := nimbusv1.NewCodeServiceClient(s.c.ConnAs(addr, id)).GetCodeMeta(ctx, &nimbusv1.GetCodeMetaRequest{TopologyId: topology})
		return err
	}
	nimbus := s.sec.Client(t, testcluster.NimbusPrincipal)
	testcluster.WaitFor(t, 20*time.Second, "the supervisor holding supjob's code", func() error { return meta(nimbus, id) })
	for _, tc := range []struct {
		who  testcluster.Identity
		want codes.Code
	}{
		{s.sec.Admin, codes.OK},
		{alice, codes.PermissionDenied}, // the owner fetches from nimbuses, not supervisors
		{s.sec.Client(t, "trudy"), codes.PermissionDenied},
		{s.sec.Client(t, testcluster.SupervisorPrincipal), codes.PermissionDenied},
	} {
		if err := meta(tc.who, id); status.Code(err) != tc.want {
			t.Errorf("%s asks the supervisor for supjob's meta: %v, want %v", tc.who.Principal, err, tc.want)
		}
	}
	if err := meta(s.sec.Anonymous(), id); err == nil {
		t.Error("a caller without a certificate read code from the supervisor")
	}
}
