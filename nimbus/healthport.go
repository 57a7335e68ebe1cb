package nimbus

import (
	"fmt"
	"net"
	"strconv"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/nimbusha/nimbus/configs"
)

// The health port (nimbus.health.port): the gRPC health service alone, in
// plaintext, for probes that cannot speak TLS, such as Kubernetes' grpc
// probes (deploy/k8s). It answers the same health server the gRPC port
// serves: SERVING or NOT_SERVING per service name, nothing that needs a
// caller's identity; a caller's Watch streams are bounded as there.

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
		grpc.ChainStreamInterceptor(newWatchLimit(s.cfg.NimbusMaxWatches).interceptor))
	healthpb.RegisterHealthServer(srv, s.health)
	s.lc.Go(func() {
		if err := srv.Serve(s.healthLn); err != nil {
			s.lc.Fail(fmt.Errorf("nimbus: %s: %w", configs.KeyNimbusHealthPort, err))
		}
	})
	s.lc.OnClose(srv.Stop)
}
