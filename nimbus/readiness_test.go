package nimbus

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// healthOf is the status of one health service, as a probe sees it.
func healthOf(t *testing.T, conn *grpc.ClientConn, service string) healthpb.HealthCheckResponse_ServingStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		t.Fatalf("health %q: %v", service, err)
	}
	return resp.GetStatus()
}

// awaitHealth waits until each service in want has its status.
func awaitHealth(t *testing.T, conn *grpc.ClientConn, want map[string]healthpb.HealthCheckResponse_ServingStatus) {
	t.Helper()
	testcluster.WaitFor(t, 15*time.Second, fmt.Sprintf("health %v", want), func() error {
		for service, st := range want {
			if got := healthOf(t, conn, service); got != st {
				return fmt.Errorf("health %q is %v", service, got)
			}
		}
		return nil
	})
}

// The readiness service a Kubernetes probe asks is SERVING while the
// nimbus holds, verified, the code of every live topology, and NOT_SERVING
// while it lacks some (its copy taken away, with no other replica to fetch
// from), while "" (liveness) stays SERVING throughout; the code put back,
// it is ready again without a restart.
func TestReadinessFollowsTheCodeHeld(t *testing.T) {
	const (
		live  = ""
		ready = nimbusv1.ReadyHealthService
	)
	serving, notServing := healthpb.HealthCheckResponse_SERVING, healthpb.HealthCheckResponse_NOT_SERVING
	z := testcluster.StartZooKeeper(t)
	s := startWith(t, z.Addr(), t.TempDir(), func(c *configs.Config) {
		c.CodeLostGraceSecs = configs.WaitForever // the code held nowhere stays needed
	})
	conn := dial(t, s)
	awaitHealth(t, conn, map[string]healthpb.HealthCheckResponse_ServingStatus{live: serving, ready: serving})
	awaitLeading(t, s)

	id := submitSpec(t, sdk(t, s), "ready")
	awaitHealth(t, conn, map[string]healthpb.HealthCheckResponse_ServingStatus{live: serving, ready: serving})

	// Moved, not deleted: the same bytes come back below.
	aside := t.TempDir() + "/code"
	if err := os.Rename(s.store.Dir(id), aside); err != nil {
		t.Fatal(err)
	}
	awaitHealth(t, conn, map[string]healthpb.HealthCheckResponse_ServingStatus{live: serving, ready: notServing})

	if err := os.Rename(aside, s.store.Dir(id)); err != nil {
		t.Fatal(err)
	}
	awaitHealth(t, conn, map[string]healthpb.HealthCheckResponse_ServingStatus{live: serving, ready: serving})
}
