package codeservice_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/auth"
	"github.com/nimbusha/nimbus/codedistributor"
	"github.com/nimbusha/nimbus/codeservice"
	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/testkit/authtest"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

const (
	topologyID = "bobjob-3-1700000000"
	secret     = "hunter2-db-password"
	artifact   = "the topology's code"
)

// install puts a bundle for topologyID in a new store: its spec is
// olive's, with tom in topology.users and a secret in its conf.
func install(t *testing.T) *codedistributor.Store {
	t.Helper()
	store, err := codedistributor.OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	spec, err := proto.Marshal(&nimbusv1.TopologySpec{Name: "bobjob", Owner: "olive",
		Config: map[string]string{configs.TopologyUsers: "tom, carol", "db.password": secret}})
	if err != nil {
		t.Fatal(err)
	}
	tmp, err := store.NewTemp()
	if err != nil {
		t.Fatal(err)
	}
	meta := &clusterv1.CodeMeta{TopologyId: topologyID, Distributor: "localfs"}
	for name, data := range map[string][]byte{codedistributor.SpecFile: spec, codedistributor.ArtifactFile: []byte(artifact)} {
		if err := os.WriteFile(filepath.Join(tmp, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := codedistributor.DescribeFile(tmp, name)
		if err != nil {
			t.Fatal(err)
		}
		meta.Files = append(meta.Files, f)
	}
	if _, err := store.Install(tmp, topologyID, meta); err != nil {
		t.Fatal(err)
	}
	return store
}

// serve runs a CodeService over store behind the interceptors of an
// authorizer for cfg, on loopback with real TLS; withAuth says whether the
// service itself has the authorizer.
func serve(t *testing.T, cfg *configs.Config, store *codedistributor.Store, withAuth bool, more ...codeservice.Option) (*authtest.CA, string) {
	t.Helper()
	a, err := auth.New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	var opts []codeservice.Option
	if withAuth {
		opts = append(opts, codeservice.WithAuthorizer(a))
	}
	opts = append(opts, more...)
	ca := authtest.NewCA(t)
	addr := authtest.Serve(t, ca.ServerConfig(t), func(s *grpc.Server) {
		nimbusv1.RegisterCodeServiceServer(s, codeservice.New(store, nil, opts...))
	}, grpc.ChainUnaryInterceptor(a.UnaryServerInterceptor()), grpc.ChainStreamInterceptor(a.StreamServerInterceptor()))
	return ca, addr
}

func secure() *configs.Config {
	cfg := configs.Default()
	cfg.TLSEnable, cfg.TLSClientAuthRequired = true, true
	cfg.NimbusAdmins = []string{"ada"}
	cfg.NimbusUsers = []string{"uma"}
	cfg.NimbusSupervisorUsers = []string{"sup"}
	cfg.NimbusDaemonUsers = []string{"nim"}
	return cfg
}

// client is a CodeService client presenting who's certificate ("": none).
func client(t *testing.T, ca *authtest.CA, addr, who string) nimbusv1.CodeServiceClient {
	t.Helper()
	cfg := ca.ClientConfig()
	if who != "" {
		cfg = ca.ClientConfig(ca.Client(t, who))
	}
	return nimbusv1.NewCodeServiceClient(authtest.Dial(t, addr, cfg))
}

// download fetches one file and returns every byte received, even when the
// stream then fails.
func download(t *testing.T, c nimbusv1.CodeServiceClient, file string) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := c.DownloadCode(ctx, &nimbusv1.DownloadCodeRequest{TopologyId: topologyID, File: file})
	if err != nil {
		return nil, err
	}
	var got []byte
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return got, nil
		}
		if err != nil {
			return got, err
		}
		got = append(got, resp.GetChunk()...)
	}
}

func getMeta(c nimbusv1.CodeServiceClient) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.GetCodeMeta(ctx, &nimbusv1.GetCodeMetaRequest{TopologyId: topologyID})
	return err
}

// TestAuthorizedDownload: the owner, its topology.users, supervisors,
// daemons and admins fetch a topology's code; anyone else, and a caller
// without a certificate, gets nothing: not the meta, not a byte of the
// artifact, not the spec and its conf.
func TestAuthorizedDownload(t *testing.T) {
	store := install(t)
	ca, addr := serve(t, secure(), store, true)
	for _, tc := range []struct {
		who  string
		want codes.Code
	}{
		{"olive", codes.OK},             // the owner
		{"tom", codes.OK},               // in topology.users
		{"carol", codes.OK},             // in topology.users
		{"sup", codes.OK},               // nimbus.supervisor.users
		{"nim", codes.OK},               // nimbus.daemon.users
		{"ada", codes.OK},               // nimbus.admins
		{"uma", codes.PermissionDenied}, // nimbus.users: may submit, not read others' code
		{"eve", codes.PermissionDenied},
		{"", codes.Unauthenticated},
	} {
		c := client(t, ca, addr, tc.who)
		if err := getMeta(c); status.Code(err) != tc.want {
			t.Errorf("%q: GetCodeMeta: %v, want %v", tc.who, err, tc.want)
		}
		for _, file := range []string{codedistributor.ArtifactFile, codedistributor.SpecFile} {
			got, err := download(t, c, file)
			if status.Code(err) != tc.want {
				t.Errorf("%q: DownloadCode %s: %v, want %v", tc.who, file, err, tc.want)
			}
			if tc.want != codes.OK {
				if len(got) != 0 {
					t.Errorf("%q: a refused download of %s sent %d bytes", tc.who, file, len(got))
				}
				continue
			}
			if file == codedistributor.ArtifactFile && string(got) != artifact {
				t.Errorf("%q: downloaded %q", tc.who, got)
			}
		}
		if tc.want == codes.PermissionDenied {
			_, err := download(t, c, codedistributor.ArtifactFile)
			want := tc.who + " may not fetch the code of " + topologyID
			if !strings.Contains(status.Convert(err).Message(), want) {
				t.Errorf("refusal %q does not say %q", status.Convert(err).Message(), want)
			}
		}
	}
}

// TestUnwiredService: behind the interceptors with authentication on, a
// CodeService built without WithAuthorizer serves nobody (fail closed).
func TestUnwiredService(t *testing.T) {
	ca, addr := serve(t, secure(), install(t), false)
	c := client(t, ca, addr, "sup")
	if err := getMeta(c); status.Code(err) != codes.PermissionDenied {
		t.Errorf("GetCodeMeta: %v, want PermissionDenied", err)
	}
	got, err := download(t, c, codedistributor.ArtifactFile)
	if status.Code(err) != codes.PermissionDenied || len(got) != 0 {
		t.Errorf("DownloadCode: %d bytes, %v; want none and PermissionDenied", len(got), err)
	}
}

// TestAuthenticationOff: with authentication off anyone fetches.
func TestAuthenticationOff(t *testing.T) {
	cfg := secure()
	cfg.TLSClientAuthRequired = false
	ca, addr := serve(t, cfg, install(t), true)
	for _, who := range []string{"", "eve"} {
		c := client(t, ca, addr, who)
		if err := getMeta(c); err != nil {
			t.Errorf("%q: GetCodeMeta: %v", who, err)
		}
		if got, err := download(t, c, codedistributor.ArtifactFile); err != nil || string(got) != artifact {
			t.Errorf("%q: DownloadCode: %q, %v", who, got, err)
		}
	}
}

// TestCorruptSpec: a stored spec that does not match its meta authorizes
// nothing: DataLoss, and the copy is reported so it is fetched again.
func TestCorruptSpec(t *testing.T) {
	store := install(t)
	reported := store.Reported()
	path := filepath.Join(store.Dir(topologyID), codedistributor.SpecFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Same size, so only the hash tells: the owner is now "olivf".
	if err := os.WriteFile(path, bytes.Replace(data, []byte("olive"), []byte("olivf"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := codeservice.ReadSpec(store, topologyID); !errors.Is(err, codedistributor.ErrCorrupt) {
		t.Fatalf("ReadSpec of a corrupt spec: %v", err)
	}
	select {
	case <-reported:
	default:
		t.Error("the corrupt spec was not reported")
	}
	ca, addr := serve(t, secure(), store, true)
	if _, err := download(t, client(t, ca, addr, "sup"), codedistributor.ArtifactFile); status.Code(err) != codes.DataLoss {
		t.Errorf("a download authorized by a corrupt spec: %v, want DataLoss", err)
	}
}

// TestReadSpecNotHeld: no code, no spec.
func TestReadSpecNotHeld(t *testing.T) {
	store, err := codedistributor.OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := codeservice.ReadSpec(store, topologyID); !errors.Is(err, codedistributor.ErrNotHeld) {
		t.Fatalf("ReadSpec of code not held: %v", err)
	}
}

// TestRecoverCode: a supervisor's store, served with ActionRecoverCode,
// answers nimbuses and admins only; not the owner, its topology.users or
// other supervisors: a supervisor's copy is for recovery only.
func TestRecoverCode(t *testing.T) {
	ca, addr := serve(t, secure(), install(t), true, codeservice.WithAction(auth.ActionRecoverCode))
	for who, want := range map[string]codes.Code{
		"nim": codes.OK, "ada": codes.OK,
		"olive": codes.PermissionDenied, "tom": codes.PermissionDenied, "sup": codes.PermissionDenied,
		"eve": codes.PermissionDenied, "": codes.Unauthenticated,
	} {
		c := client(t, ca, addr, who)
		if err := getMeta(c); status.Code(err) != want {
			t.Errorf("%q: GetCodeMeta: %v, want %v", who, err, want)
		}
		got, err := download(t, c, codedistributor.ArtifactFile)
		if status.Code(err) != want || (want != codes.OK && len(got) != 0) {
			t.Errorf("%q: DownloadCode: %d bytes, %v; want %v", who, len(got), err, want)
		}
	}
}
