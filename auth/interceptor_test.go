package auth_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/nimbusha/nimbus/apierr"
	"github.com/nimbusha/nimbus/apistatus"
	"github.com/nimbusha/nimbus/auth"
	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/testkit/authtest"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// secret is a conf value no log line may carry.
const secret = "hunter2-db-password"

// fakeNimbus is a NimbusService whose handlers do what the real ones must:
// KillTopology asks Authorizer.Topology with the topology's owner and
// topology.users; ActivateTopology forgets to (the interceptor's guard
// catches it); GetLeader answers the caller's principal as the host, so a
// test sees what reached the handler.
type fakeNimbus struct {
	nimbusv1.UnimplementedNimbusServiceServer
	a *auth.Authorizer

	mu        sync.Mutex
	submitted []string // principal/name of each submission that reached the handler
}

func (f *fakeNimbus) GetLeader(ctx context.Context, _ *nimbusv1.GetLeaderRequest) (*nimbusv1.GetLeaderResponse, error) {
	p, _ := auth.FromContext(ctx)
	return &nimbusv1.GetLeaderResponse{Leader: &nimbusv1.NimbusSummary{Host: p}}, nil
}

func (f *fakeNimbus) GetClusterInfo(context.Context, *nimbusv1.GetClusterInfoRequest) (*nimbusv1.GetClusterInfoResponse, error) {
	return &nimbusv1.GetClusterInfoResponse{}, nil
}

func (f *fakeNimbus) KillTopology(ctx context.Context, req *nimbusv1.KillTopologyRequest) (*nimbusv1.KillTopologyResponse, error) {
	// The topology "bobjob", id bobjob-3-1700000000, is olive's; tom is in
	// its topology.users.
	if req.GetName() != "bobjob" {
		return nil, apistatus.ToStatus(apierr.ErrNotFound)
	}
	conf := map[string]string{configs.TopologyUsers: "tom", "db.password": secret}
	if err := f.a.Topology(ctx, auth.ActionKill, topologyID, owner, auth.TopologyUsers(conf)); err != nil {
		return nil, apistatus.ToStatus(err)
	}
	return &nimbusv1.KillTopologyResponse{}, nil
}

func (f *fakeNimbus) ActivateTopology(context.Context, *nimbusv1.ActivateTopologyRequest) (*nimbusv1.ActivateTopologyResponse, error) {
	return &nimbusv1.ActivateTopologyResponse{}, nil // no check: a bug the interceptor logs
}

func (f *fakeNimbus) SubmitTopology(stream nimbusv1.NimbusService_SubmitTopologyServer) error {
	var name string
	for {
		req, err := stream.Recv()
		if err != nil {
			return status.Error(codes.InvalidArgument, "stream ended before its trailer")
		}
		if s := req.GetSpec(); s != nil {
			name = s.GetName()
		}
		if req.GetTrailer() != nil {
			break
		}
	}
	p, _ := auth.FromContext(stream.Context())
	f.mu.Lock()
	f.submitted = append(f.submitted, p+"/"+name)
	f.mu.Unlock()
	return stream.SendAndClose(&nimbusv1.SubmitTopologyResponse{TopologyId: name + "-1-1700000000"})
}

func (f *fakeNimbus) submissions() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.submitted...)
}

// fakeCode is a CodeService that forgets to authorize: it serves anyone.
type fakeCode struct {
	nimbusv1.UnimplementedCodeServiceServer
}

func (fakeCode) GetCodeMeta(context.Context, *nimbusv1.GetCodeMetaRequest) (*nimbusv1.GetCodeMetaResponse, error) {
	return &nimbusv1.GetCodeMetaResponse{Meta: []byte("meta")}, nil
}

func (fakeCode) DownloadCode(_ *nimbusv1.DownloadCodeRequest, stream nimbusv1.CodeService_DownloadCodeServer) error {
	return stream.Send(&nimbusv1.DownloadCodeResponse{Chunk: []byte(secret)})
}

// logBuffer collects JSON log lines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// lines returns the log lines whose message is msg.
func (b *logBuffer) lines(t *testing.T, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for l := range strings.Lines(b.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// cluster is a gRPC server with the interceptors, real TLS on loopback,
// and the services a nimbus registers (fakes of ours, grpc's health), plus
// an unknown-service handler that answers NotFound.
type cluster struct {
	ca     *authtest.CA
	addr   string
	nimbus *fakeNimbus
	log    *logBuffer
}

func startCluster(t *testing.T, cfg *configs.Config) *cluster {
	t.Helper()
	return startClusterTLS(t, cfg, nil)
}

// startClusterTLS is startCluster with the server's TLS configuration
// changed by edit, if not nil.
func startClusterTLS(t *testing.T, cfg *configs.Config, edit func(*tls.Config)) *cluster {
	t.Helper()
	c := &cluster{ca: authtest.NewCA(t), log: &logBuffer{}}
	log := slog.New(slog.NewJSONHandler(c.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	a := newAuthorizer(t, cfg, log)
	c.nimbus = &fakeNimbus{a: a}
	tlsCfg := c.ca.ServerConfig(t)
	if edit != nil {
		edit(tlsCfg)
	}
	c.addr = authtest.Serve(t, tlsCfg, func(s *grpc.Server) {
		nimbusv1.RegisterNimbusServiceServer(s, c.nimbus)
		nimbusv1.RegisterCodeServiceServer(s, fakeCode{})
		healthpb.RegisterHealthServer(s, health.NewServer())
	},
		grpc.ChainUnaryInterceptor(a.UnaryServerInterceptor()),
		grpc.ChainStreamInterceptor(a.StreamServerInterceptor()),
		grpc.UnknownServiceHandler(func(any, grpc.ServerStream) error {
			return status.Error(codes.NotFound, "reached the unknown-service handler")
		}),
	)
	return c
}

// as is a connection presenting who's certificate ("" for none).
func (c *cluster) as(t *testing.T, who string) *grpc.ClientConn {
	t.Helper()
	if who == "" {
		return authtest.Dial(t, c.addr, c.ca.ClientConfig())
	}
	return authtest.Dial(t, c.addr, c.ca.ClientConfig(c.ca.Client(t, who)))
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// submit uploads a small topology named name, its conf holding secret.
func submit(ctx context.Context, conn *grpc.ClientConn, name string) (*nimbusv1.SubmitTopologyResponse, error) {
	stream, err := nimbusv1.NewNimbusServiceClient(conn).SubmitTopology(ctx)
	if err != nil {
		return nil, err
	}
	for _, req := range []*nimbusv1.SubmitTopologyRequest{
		{Part: &nimbusv1.SubmitTopologyRequest_Spec{Spec: &nimbusv1.TopologySpec{Name: name, Owner: "claimed-by-client",
			Config: map[string]string{"db.password": secret}}}},
		{Part: &nimbusv1.SubmitTopologyRequest_Chunk{Chunk: []byte("code")}},
		{Part: &nimbusv1.SubmitTopologyRequest_Trailer{Trailer: &nimbusv1.ArtifactTrailer{}}},
	} {
		if err := stream.Send(req); err != nil {
			if errors.Is(err, io.EOF) {
				break // the server answered already: CloseAndRecv has it
			}
			return nil, err
		}
	}
	return stream.CloseAndRecv()
}

func wantCode(t *testing.T, what string, err error, want codes.Code) {
	t.Helper()
	if got := status.Code(err); got != want {
		t.Errorf("%s: got %v (%v), want %v", what, got, err, want)
	}
}

// TestNoCertificate: with authentication on, a caller without a client
// certificate gets Unauthenticated from every method, reads included, and
// reaches no handler.
func TestNoCertificate(t *testing.T) {
	c := startCluster(t, secureConfig())
	conn := c.as(t, "")
	ctx := ctxT(t)
	nc := nimbusv1.NewNimbusServiceClient(conn)
	_, err := nc.GetLeader(ctx, &nimbusv1.GetLeaderRequest{})
	wantCode(t, "GetLeader", err, codes.Unauthenticated)
	_, err = nc.GetClusterInfo(ctx, &nimbusv1.GetClusterInfoRequest{})
	wantCode(t, "GetClusterInfo", err, codes.Unauthenticated)
	_, err = healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	wantCode(t, "health Check", err, codes.Unauthenticated)
	w, err := healthpb.NewHealthClient(conn).Watch(ctx, &healthpb.HealthCheckRequest{})
	if err == nil {
		_, err = w.Recv()
	}
	wantCode(t, "health Watch", err, codes.Unauthenticated)
	_, err = submit(ctx, conn, "wordcount")
	wantCode(t, "SubmitTopology", err, codes.Unauthenticated)
	_, err = nc.KillTopology(ctx, &nimbusv1.KillTopologyRequest{Name: "bobjob"})
	wantCode(t, "KillTopology", err, codes.Unauthenticated)
	err = conn.Invoke(ctx, "/nimbus.v1.NimbusService/Secret", &nimbusv1.GetLeaderRequest{}, &nimbusv1.GetLeaderResponse{})
	wantCode(t, "an unknown method", err, codes.Unauthenticated)
	if s := c.nimbus.submissions(); len(s) != 0 {
		t.Errorf("submissions reached the handler: %v", s)
	}
	if !strings.Contains(status.Convert(err).Message(), "no client certificate: this nimbus requires one") {
		t.Errorf("the refusal does not say why: %v", err)
	}
	audits := c.log.lines(t, "audit")
	if len(audits) != 2 {
		t.Fatalf("%d audit lines, want 2 (submit, kill): %s", len(audits), c.log)
	}
	for _, l := range audits {
		if l["principal"] != auth.Anonymous || l["outcome"] != "Unauthenticated" {
			t.Errorf("audit line %v", l)
		}
	}
}

// TestUnverifiedCertificate: a certificate the server took without
// verifying it (a server that only requests one) names no one.
func TestUnverifiedCertificate(t *testing.T) {
	c := startClusterTLS(t, secureConfig(), func(cfg *tls.Config) {
		cfg.ClientAuth, cfg.ClientCAs = tls.RequireAnyClientCert, nil
	})
	conn := authtest.Dial(t, c.addr, c.ca.ClientConfig(authtest.SelfSigned(t, admin)))
	_, err := nimbusv1.NewNimbusServiceClient(conn).GetLeader(ctxT(t), &nimbusv1.GetLeaderRequest{})
	wantCode(t, "GetLeader with a self-signed certificate", err, codes.Unauthenticated)
}

// TestClusterReads: any authenticated caller reads the cluster, over unary
// calls and streams, and its principal reaches the handler.
func TestClusterReads(t *testing.T) {
	c := startCluster(t, secureConfig(nimbusUser))
	ctx := ctxT(t)
	for _, who := range cast {
		conn := c.as(t, who)
		resp, err := nimbusv1.NewNimbusServiceClient(conn).GetLeader(ctx, &nimbusv1.GetLeaderRequest{})
		if err != nil || resp.GetLeader().GetHost() != who {
			t.Errorf("%s: GetLeader: %v, handler saw %q", who, err, resp.GetLeader().GetHost())
		}
		if _, err := nimbusv1.NewNimbusServiceClient(conn).GetClusterInfo(ctx, &nimbusv1.GetClusterInfoRequest{}); err != nil {
			t.Errorf("%s: GetClusterInfo: %v", who, err)
		}
		if r, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil || r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("%s: health Check: %v, %v", who, r.GetStatus(), err)
		}
		w, err := healthpb.NewHealthClient(conn).Watch(ctx, &healthpb.HealthCheckRequest{})
		if err == nil {
			_, err = w.Recv()
		}
		if err != nil {
			t.Errorf("%s: health Watch: %v", who, err)
		}
	}
	if l := c.log.lines(t, "audit"); len(l) != 0 {
		t.Errorf("reads were audited: %v", l)
	}
}

// TestSubmit: with nimbus.users set only its members and admins submit; a
// refusal names the principal and reaches no handler; each submit is
// audited once, by its name and id, without the conf.
func TestSubmit(t *testing.T) {
	c := startCluster(t, secureConfig(nimbusUser))
	ctx := ctxT(t)
	_, err := submit(ctx, c.as(t, stranger), "evejob")
	wantCode(t, "a stranger's submit", err, codes.PermissionDenied)
	if msg := status.Convert(err).Message(); !strings.Contains(msg, "eve may not submit: not in nimbus.users or nimbus.admins") {
		t.Errorf("refusal: %q", msg)
	}
	for _, who := range []string{nimbusUser, admin} {
		resp, err := submit(ctx, c.as(t, who), who+"job")
		if err != nil || resp.GetTopologyId() != who+"job-1-1700000000" {
			t.Fatalf("%s's submit: %v, %v", who, resp, err)
		}
	}
	if got, want := strings.Join(c.nimbus.submissions(), " "), "uma/umajob ada/adajob"; got != want {
		t.Errorf("the handler saw submissions %q, want %q", got, want)
	}
	audits := c.log.lines(t, "audit")
	if len(audits) != 3 {
		t.Fatalf("%d audit lines, want 3: %s", len(audits), c.log)
	}
	wantAudit(t, audits[0], map[string]any{"principal": stranger, "action": "submit", "target": "", "outcome": "PermissionDenied"})
	wantAudit(t, audits[1], map[string]any{"principal": nimbusUser, "action": "submit", "target": "umajob", "topology": "umajob-1-1700000000", "outcome": "ok"})
	wantAudit(t, audits[2], map[string]any{"principal": admin, "action": "submit", "target": "adajob", "topology": "adajob-1-1700000000", "outcome": "ok"})
	if strings.Contains(c.log.String(), secret) {
		t.Errorf("a conf value reached the log: %s", c.log)
	}
}

// TestSubmitUsersEmpty: with nimbus.users empty any authenticated
// principal submits.
func TestSubmitUsersEmpty(t *testing.T) {
	c := startCluster(t, secureConfig())
	if _, err := submit(ctxT(t), c.as(t, stranger), "evejob"); err != nil {
		t.Fatalf("a stranger's submit with nimbus.users empty: %v", err)
	}
}

// TestKill: the handler's Authorizer.Topology lets the owner, a topology
// user and an admin kill, and refuses the others, naming them; one audit
// line each.
func TestKill(t *testing.T) {
	c := startCluster(t, secureConfig(nimbusUser))
	ctx := ctxT(t)
	allowed := map[string]bool{admin: true, owner: true, topoUser: true}
	for _, who := range cast {
		_, err := nimbusv1.NewNimbusServiceClient(c.as(t, who)).KillTopology(ctx, &nimbusv1.KillTopologyRequest{Name: "bobjob"})
		if allowed[who] {
			wantCode(t, who+"'s kill", err, codes.OK)
			continue
		}
		wantCode(t, who+"'s kill", err, codes.PermissionDenied)
		want := who + " may not kill bobjob-3-1700000000: not its owner, in topology.users or nimbus.admins"
		if msg := status.Convert(err).Message(); !strings.Contains(msg, want) {
			t.Errorf("refusal %q does not say %q", msg, want)
		}
	}
	audits := c.log.lines(t, "audit")
	if len(audits) != len(cast) {
		t.Fatalf("%d audit lines for %d kills: %s", len(audits), len(cast), c.log)
	}
	for i, who := range cast {
		out := "PermissionDenied"
		if allowed[who] {
			out = "ok"
		}
		wantAudit(t, audits[i], map[string]any{"principal": who, "action": "kill", "target": "bobjob", "outcome": out})
		if audits[i]["remote"] == nil {
			t.Errorf("audit line without the caller's address: %v", audits[i])
		}
	}
	if strings.Contains(c.log.String(), secret) {
		t.Errorf("a conf value reached the log: %s", c.log)
	}
}

// TestUnknownMethod: a method the table does not know is refused with
// authentication on, even for an admin; with it off it is served as
// before.
func TestUnknownMethod(t *testing.T) {
	call := func(c *cluster, who string) error {
		return c.as(t, who).Invoke(ctxT(t), "/nimbus.v1.NimbusService/Secret", &nimbusv1.GetLeaderRequest{}, &nimbusv1.GetLeaderResponse{})
	}
	on := startCluster(t, secureConfig())
	wantCode(t, "an admin calling an unknown method", call(on, admin), codes.PermissionDenied)
	off := secureConfig()
	off.TLSClientAuthRequired = false
	wantCode(t, "an unknown method with authentication off", call(startCluster(t, off), ""), codes.NotFound)
}

// TestUncheckedHandler: a topology-scoped call whose handler never asked
// Authorizer.Topology is logged as an error; a read is refused before
// anything is sent, a mutation's answer stands.
func TestUncheckedHandler(t *testing.T) {
	c := startCluster(t, secureConfig())
	ctx := ctxT(t)
	conn := c.as(t, supervisor)
	_, err := nimbusv1.NewCodeServiceClient(conn).GetCodeMeta(ctx, &nimbusv1.GetCodeMetaRequest{TopologyId: topologyID})
	wantCode(t, "an unchecked GetCodeMeta", err, codes.PermissionDenied)
	stream, err := nimbusv1.NewCodeServiceClient(conn).DownloadCode(ctx, &nimbusv1.DownloadCodeRequest{TopologyId: topologyID, File: "artifact"})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	wantCode(t, "an unchecked DownloadCode", err, codes.PermissionDenied)
	if len(resp.GetChunk()) != 0 {
		t.Errorf("an unchecked download sent %q", resp.GetChunk())
	}
	_, err = nimbusv1.NewNimbusServiceClient(conn).ActivateTopology(ctx, &nimbusv1.ActivateTopologyRequest{Name: "bobjob"})
	wantCode(t, "an unchecked ActivateTopology", err, codes.OK)
	if n := strings.Count(c.log.String(), "without an authorization check"); n != 3 {
		t.Errorf("%d errors logged for 3 unchecked calls: %s", n, c.log)
	}
}

// TestOff: with authentication off (TLS, no client authentication) every
// call is served, callers are anonymous, and mutating calls are still
// audited.
func TestOff(t *testing.T) {
	cfg := secureConfig(nimbusUser)
	cfg.TLSClientAuthRequired = false
	c := startCluster(t, cfg)
	ctx := ctxT(t)
	for _, who := range []string{"", stranger} {
		conn := c.as(t, who)
		resp, err := nimbusv1.NewNimbusServiceClient(conn).GetLeader(ctx, &nimbusv1.GetLeaderRequest{})
		if err != nil || resp.GetLeader().GetHost() != "" {
			t.Errorf("GetLeader as %q: %v, handler saw %q", who, err, resp.GetLeader().GetHost())
		}
		if _, err := submit(ctx, conn, "job"); err != nil {
			t.Errorf("submit as %q: %v", who, err)
		}
		if _, err := nimbusv1.NewNimbusServiceClient(conn).KillTopology(ctx, &nimbusv1.KillTopologyRequest{Name: "bobjob"}); err != nil {
			t.Errorf("kill as %q: %v", who, err)
		}
		if _, err := nimbusv1.NewCodeServiceClient(conn).GetCodeMeta(ctx, &nimbusv1.GetCodeMetaRequest{TopologyId: topologyID}); err != nil {
			t.Errorf("GetCodeMeta as %q: %v", who, err)
		}
	}
	audits := c.log.lines(t, "audit")
	if len(audits) != 4 {
		t.Fatalf("%d audit lines, want 4: %s", len(audits), c.log)
	}
	for _, l := range audits {
		if l["principal"] != auth.Anonymous || l["outcome"] != "ok" {
			t.Errorf("audit line %v", l)
		}
	}
}

func wantAudit(t *testing.T, line, want map[string]any) {
	t.Helper()
	for k, v := range want {
		got, ok := line[k]
		if v == "" && !ok {
			continue
		}
		if got != v {
			t.Errorf("audit %s = %v, want %v (line %v)", k, got, v, line)
		}
	}
	if line["level"] != "INFO" {
		t.Errorf("audit at level %v", line["level"])
	}
}

// TestForward: a nimbus (nimbus.daemon.users) that forwards a request for
// its HTTP caller (auth.Forward) gets it decided and audited as that
// caller; anyone else who sends the metadata is refused, even an admin.
func TestForward(t *testing.T) {
	c := startCluster(t, secureConfig())
	ctx := ctxT(t)
	kill := func(via, forWhom string) error {
		call := ctx
		if forWhom != "" {
			call = auth.Forward(auth.NewContext(ctx, forWhom))
		}
		_, err := nimbusv1.NewNimbusServiceClient(c.as(t, via)).KillTopology(call, &nimbusv1.KillTopologyRequest{Name: "bobjob"})
		return err
	}
	wantCode(t, "the owner's kill forwarded by a nimbus", kill(daemon, owner), codes.OK)
	wantCode(t, "a stranger's kill forwarded by a nimbus", kill(daemon, stranger), codes.PermissionDenied)
	wantCode(t, "a nimbus's own kill", kill(daemon, ""), codes.PermissionDenied)
	err := kill(admin, owner)
	wantCode(t, "an admin claiming to forward", err, codes.PermissionDenied)
	if msg := status.Convert(err).Message(); !strings.Contains(msg, "only nimbus.daemon.users forward requests") {
		t.Errorf("refusal %q does not say who may forward", msg)
	}
	audits := c.log.lines(t, "audit")
	if len(audits) != 4 {
		t.Fatalf("%d audit lines for 4 kills: %s", len(audits), c.log)
	}
	wantAudit(t, audits[0], map[string]any{"principal": owner, "via": daemon, "outcome": "ok"})
	wantAudit(t, audits[1], map[string]any{"principal": stranger, "via": daemon, "outcome": "PermissionDenied"})
	wantAudit(t, audits[3], map[string]any{"principal": admin, "outcome": "PermissionDenied"})
}

// TestForwardedClient: the leader's audit line of a forwarded call names
// the forwarded caller's address ("client") only when a nimbus
// (nimbus.daemon.users) forwarded the call and sent one host:port;
// anyone else's claim of an address, and a malformed one, are ignored
// and change nothing else.
func TestForwardedClient(t *testing.T) {
	c := startCluster(t, secureConfig())
	ctx := ctxT(t)
	const browser = "198.51.100.7:51234"
	kill := func(who string, call context.Context) error {
		_, err := nimbusv1.NewNimbusServiceClient(c.as(t, who)).KillTopology(call, &nimbusv1.KillTopologyRequest{Name: "bobjob"})
		return err
	}
	wantCode(t, "the owner's kill forwarded by a nimbus from a browser",
		kill(daemon, auth.Forward(auth.WithClient(auth.NewContext(ctx, owner), browser))), codes.OK)
	wantCode(t, "the owner's own kill claiming a client address",
		kill(owner, metadata.AppendToOutgoingContext(ctx, "nimbus-forwarded-client", browser)), codes.OK)
	wantCode(t, "a forwarded kill with a malformed client address",
		kill(daemon, metadata.AppendToOutgoingContext(ctx, "nimbus-forwarded-for", owner, "nimbus-forwarded-client", "browser")), codes.OK)
	wantCode(t, "a forwarded kill with two client addresses",
		kill(daemon, metadata.AppendToOutgoingContext(ctx, "nimbus-forwarded-for", owner,
			"nimbus-forwarded-client", browser, "nimbus-forwarded-client", "192.0.2.1:1")), codes.OK)

	audits := c.log.lines(t, "audit")
	if len(audits) != 4 {
		t.Fatalf("%d audit lines for 4 kills: %s", len(audits), c.log)
	}
	wantAudit(t, audits[0], map[string]any{"principal": owner, "via": daemon, "client": browser, "outcome": "ok"})
	wantAudit(t, audits[1], map[string]any{"principal": owner, "outcome": "ok"})
	for i, l := range audits[1:] {
		if l["client"] != nil {
			t.Errorf("audit line %d names client %v, which it must ignore: %v", i+1, l["client"], l)
		}
	}
}
