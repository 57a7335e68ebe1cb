package supervisor

import (
	"fmt"
	"net"
	"strconv"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/nimbusha/nimbus/auth"
	"github.com/nimbusha/nimbus/codeservice"
	"github.com/nimbusha/nimbus/configs"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// listenCode binds supervisor.grpc.port, where this supervisor serves the
// verified code in its store, and the blobs in its blob store, read-only,
// to nimbuses that lost every copy of a topology or a blob (docs/ARCHITECTURE.md section 5.9). It binds as the
// metrics port does: an IP literal in storm.local.hostname means that
// interface only.
//
// With TLS on and client authentication off it refuses to serve: the port
// hands out specs with their confs (secrets included) to whoever asks, and
// a supervisor cannot see whether its nimbuses require client certificates,
// so its own configuration is the rule. TLS says the cluster is meant to
// be secure; then the code port is served only with
// nimbus.grpc.tls.client.auth.required, or not at all (supervisor.grpc.port:
// -1, which only gives up recovering lost code from this supervisor).
// Without TLS nothing is authenticated anywhere, as in Storm, and the port
// is served with a warning.
func (s *Supervisor) listenCode() (err error) {
	if s.cfg.SupervisorGRPCPort == configs.PortDisabled {
		return nil
	}
	if err := s.cfg.ValidateSupervisor(); err != nil { // daemon.Setup checked it already; a Supervisor built in code too
		return fmt.Errorf("supervisor: %w", err)
	}
	bindHost := ""
	if net.ParseIP(s.cfg.LocalHostname) != nil {
		bindHost = s.cfg.LocalHostname
	}
	if s.codeLn, err = net.Listen("tcp", net.JoinHostPort(bindHost, strconv.Itoa(s.cfg.SupervisorGRPCPort))); err != nil {
		return fmt.Errorf("supervisor: listen on %s %d: %w", configs.KeySupervisorGRPCPort, s.cfg.SupervisorGRPCPort, err)
	}
	s.lc.OnClose(func() { s.codeLn.Close() }) // closed already if served
	if s.codeSrv, err = s.codeServer(); err != nil {
		return err
	}
	if addr := s.codeLn.Addr().(*net.TCPAddr); s.tls == nil && !addr.IP.IsLoopback() {
		s.log.Warn("INSECURE: topology code served without TLS on an address others can reach; set nimbus.grpc.tls.* (README: Security)",
			"listen", addr.String())
	}
	return nil
}

// codeServer builds the CodeService of the store, with the nimbuses'
// authentication: with it on, only nimbus.daemon.users and nimbus.admins
// are answered (auth.ActionRecoverCode), over TLS when TLS is on.
func (s *Supervisor) codeServer() (*grpc.Server, error) {
	a, err := auth.New(s.cfg, s.base)
	if err != nil {
		return nil, fmt.Errorf("supervisor: %w", err)
	}
	s.authorizers = append(s.authorizers, a)
	creds := insecure.NewCredentials()
	if s.tls != nil {
		creds = s.tls.ServerCredentials(s.cfg.TLSClientAuthRequired)
	}
	srv := grpc.NewServer(grpc.Creds(creds),
		grpc.ChainUnaryInterceptor(a.UnaryServerInterceptor()),
		grpc.ChainStreamInterceptor(a.StreamServerInterceptor()))
	nimbusv1.RegisterCodeServiceServer(srv, codeservice.New(s.store, nil,
		codeservice.WithAuthorizer(a), codeservice.WithAction(auth.ActionRecoverCode), codeservice.WithBlobs(s.blobStore)))
	return srv, nil
}

// serveCode serves the code port, if any, until Close.
func (s *Supervisor) serveCode() {
	if s.codeLn == nil {
		return
	}
	s.lc.Go(func() { _ = s.codeSrv.Serve(s.codeLn) })
	s.lc.OnClose(s.codeSrv.Stop) // a download cut short is retried elsewhere
}

// codePort is the port the code is served on, for this supervisor's
// registration; 0 when it serves none.
func (s *Supervisor) codePort() int32 {
	if s.codeLn == nil {
		return 0
	}
	return int32(s.codeLn.Addr().(*net.TCPAddr).Port)
}
