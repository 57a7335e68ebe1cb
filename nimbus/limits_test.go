package nimbus

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// A caller holds at most nimbus.grpc.max.watch.streams health Watch
// streams, and the REST API serves at most ui.max.connections connections
// at once; a stream or connection closed makes room again.
func TestInProcessWatchAndUIConnectionLimits(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	s := startWith(t, z.Addr(), t.TempDir(), func(c *configs.Config) {
		c.NimbusMaxWatches = 2
		c.UIPort = 0
		c.UIMaxConnections = 2
	})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	// Watches: two, then refused, then one more once one ends.
	health := healthpb.NewHealthClient(dial(t, s))
	watch := func(ctx context.Context) error {
		w, err := health.Watch(ctx, &healthpb.HealthCheckRequest{})
		if err == nil {
			_, err = w.Recv() // the first status: the stream is open
		}
		return err
	}
	first, stopFirst := context.WithCancel(ctx)
	for _, c := range []context.Context{first, ctx} {
		if err := watch(c); err != nil {
			t.Fatal(err)
		}
	}
	checkRefused(t, watch(ctx), codes.ResourceExhausted, configs.KeyNimbusMaxWatches)
	stopFirst()
	testcluster.WaitFor(t, 10*time.Second, "a Watch again once one ended", func() error { return watch(ctx) })

	// UI connections: two held open, a third is not served until one closes.
	addr := s.uiLn.Addr().String()
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Write([]byte("GET /api/v1/cluster/summary HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		if _, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil { // served, and kept alive
			t.Fatal(err)
		}
		held = append(held, c)
	}
	third, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	if _, err := third.Write([]byte("GET /api/v1/cluster/summary HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(third)
	third.SetReadDeadline(time.Now().Add(300 * time.Millisecond)) // an answer now would break the limit
	if _, err := http.ReadResponse(r, nil); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a third connection was served while two were open: %v", err)
	}
	held[0].Close()
	third.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := http.ReadResponse(r, nil); err != nil {
		t.Fatalf("the third connection once one closed: %v", err)
	}
}

// The health port answers the probes' health services in plaintext, the
// same statuses as the gRPC port, and nothing else: not which nimbus leads,
// not the NimbusService.
func TestInProcessHealthPort(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	s := startWith(t, z.Addr(), t.TempDir(), func(c *configs.Config) { c.NimbusHealthPort = 0 })
	awaitLeading(t, s)
	conn, err := grpc.NewClient(s.healthLn.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for _, service := range []string{"", nimbusv1.ReadyHealthService, nimbusv1.LiveHealthService} {
		testcluster.WaitFor(t, 10*time.Second, "SERVING for "+service, func() error {
			resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
			if err != nil {
				return err
			}
			if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
				return fmt.Errorf("%q: %v", service, resp.GetStatus())
			}
			return nil
		})
	}
	_, err = healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: nimbusv1.LeaderHealthService})
	checkRefused(t, err, codes.NotFound)
	_, err = nimbusv1.NewNimbusServiceClient(conn).GetLeader(ctx, &nimbusv1.GetLeaderRequest{})
	checkRefused(t, err, codes.Unimplemented)
}
