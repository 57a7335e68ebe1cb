package nimbus

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"golang.org/x/net/netutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"

	"github.com/nimbusha/nimbus/configs"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// The health port (nimbus.health.port): the probes' health services alone
// ("", nimbus.v1.Ready, nimbus.v1.Live), in plaintext, for probes that
// cannot speak TLS, such as Kubernetes' grpc probes (deploy/k8s). Nobody
// is authenticated there, so it says nothing a probe does not need (not
// which nimbus leads: that takes read-cluster on the gRPC port), and its
// connections, streams and Watches are bounded.

// Bounds of the health port: probes open a connection or two.
const (
	healthMaxConns   = 64
	healthMaxStreams = 16
)

// probeServices are the services the health port answers for.
var probeServices = map[string]bool{"": true, nimbusv1.ReadyHealthService: true, nimbusv1.LiveHealthService: true}

// listenHealth opens the health port, unless it is disabled.
func (s *Server) listenHealth(bindHost string) (err error) {
	if s.cfg.NimbusHealthPort == configs.PortDisabled {
		return nil
	}
	if s.healthLn, err = net.Listen("tcp", net.JoinHostPort(bindHost, strconv.Itoa(s.cfg.NimbusHealthPort))); err != nil {
		return fmt.Errorf("nimbus: listen on %s %d: %w", configs.KeyNimbusHealthPort, s.cfg.NimbusHealthPort, err)
	}
	s.lc.OnClose(func() { s.healthLn.Close() })
	return nil
}

// serveHealth serves the health port until Close, which stops it at once:
// probes hold no work worth draining.
func (s *Server) serveHealth() {
	if s.healthLn == nil {
		return
	}
	srv := grpc.NewServer(grpc.Creds(insecure.NewCredentials()),
		grpc.MaxConcurrentStreams(healthMaxStreams),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: keepaliveMinClientPing}),
		grpc.ChainStreamInterceptor(newWatchLimit(s.cfg.NimbusMaxWatches).interceptor))
	healthpb.RegisterHealthServer(srv, probeHealth{s.health})
	ln := netutil.LimitListener(s.healthLn, healthMaxConns)
	s.lc.Go(func() {
		if err := srv.Serve(ln); err != nil {
			s.lc.Fail(fmt.Errorf("nimbus: %s: %w", configs.KeyNimbusHealthPort, err))
		}
	})
	s.lc.OnClose(srv.Stop)
}

// probeHealth is the nimbus's health server, answering for the probes'
// services only; List is not served.
type probeHealth struct{ *health.Server }

func (h probeHealth) Check(ctx context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	if !probeServices[req.GetService()] {
		return nil, status.Errorf(codes.NotFound, "%q is not a probe's service on %s", req.GetService(), configs.KeyNimbusHealthPort)
	}
	return h.Server.Check(ctx, req)
}

func (h probeHealth) Watch(req *healthpb.HealthCheckRequest, stream healthpb.Health_WatchServer) error {
	if !probeServices[req.GetService()] {
		return status.Errorf(codes.NotFound, "%q is not a probe's service on %s", req.GetService(), configs.KeyNimbusHealthPort)
	}
	return h.Server.Watch(req, stream)
}

func (probeHealth) List(context.Context, *healthpb.HealthListRequest) (*healthpb.HealthListResponse, error) {
	return nil, status.Errorf(codes.Unimplemented, "the health port lists nothing")
}
