package nimbus

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/nimbusha/nimbus/client"
	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// dial opens a gRPC connection of the test's own to s, connected before it
// returns.
func dial(t *testing.T, s *Server) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(s.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	servingStatus(t, conn) // connects
	return conn
}

// servingStatus is the health of the "" service, as a client sees it.
func servingStatus(t *testing.T, conn *grpc.ClientConn) healthpb.HealthCheckResponse_ServingStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetStatus()
}

func waitServing(t *testing.T, conn *grpc.ClientConn, want healthpb.HealthCheckResponse_ServingStatus) {
	t.Helper()
	testcluster.WaitFor(t, 10*time.Second, "health "+want.String(), func() error {
		if got := servingStatus(t, conn); got != want {
			return fmt.Errorf("health %v", got)
		}
		return nil
	})
}

func smallSpec(name string) *nimbusv1.TopologySpec {
	return &nimbusv1.TopologySpec{Name: name, NumWorkers: 1, WorkerCommand: []string{"{code_dir}/artifact"},
		Components: []*nimbusv1.ComponentSpec{{Id: "spout", Parallelism: 1}}}
}

// rawSubmit is a client without the SDK (an older one: artifact_bytes is
// whatever spec says): the spec, the chunks, the trailer with their
// SHA-256; it returns the answer's error.
func rawSubmit(ctx context.Context, conn *grpc.ClientConn, spec *nimbusv1.TopologySpec, chunks ...[]byte) error {
	stream, err := nimbusv1.NewNimbusServiceClient(conn).SubmitTopology(ctx)
	if err != nil {
		return err
	}
	send := func(m *nimbusv1.SubmitTopologyRequest) error {
		if err := stream.Send(m); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		return nil
	}
	if err := send(&nimbusv1.SubmitTopologyRequest{Part: &nimbusv1.SubmitTopologyRequest_Spec{Spec: spec}}); err != nil {
		return err
	}
	sum := sha256.New()
	for _, c := range chunks {
		sum.Write(c)
		if err := send(&nimbusv1.SubmitTopologyRequest{Part: &nimbusv1.SubmitTopologyRequest_Chunk{Chunk: c}}); err != nil {
			return err
		}
	}
	if err := send(&nimbusv1.SubmitTopologyRequest{Part: &nimbusv1.SubmitTopologyRequest_Trailer{
		Trailer: &nimbusv1.ArtifactTrailer{Sha256: sum.Sum(nil)}}}); err != nil {
		return err
	}
	_, err = stream.CloseAndRecv()
	return err
}

// tmpEntries lists the store's temporary directory.
func tmpEntries(t *testing.T, s *Server) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(s.store.Root(), "tmp"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// checkNothingCommitted fails if ZooKeeper has any topology or
// distribution besides keep.
func checkNothingCommitted(t *testing.T, s *Server, keep ...string) {
	t.Helper()
	for _, dir := range []string{s.sess.Paths().Storms(), s.sess.Paths().CodeDistributor()} {
		ids, _, err := s.sess.Conn().Children(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			ok := false
			for _, k := range keep {
				ok = ok || id == k
			}
			if !ok {
				t.Fatalf("%s holds %s", dir, id)
			}
		}
	}
}

// checkRefused fails unless err has code and its message says what it
// must (each of says).
func checkRefused(t *testing.T, err error, code codes.Code, says ...string) {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != code {
		t.Fatalf("got %v, want %v", err, code)
	}
	for _, s := range says {
		if !strings.Contains(st.Message(), s) {
			t.Fatalf("%q does not say %q", st.Message(), s)
		}
	}
}

// Submit streams that send the spec and then stall: beyond
// nimbus.max.concurrent.uploads they are refused at once with
// RESOURCE_EXHAUSTED, before any of the artifact is read; the ones let in
// hold their names until nimbus.upload.idle.timeout.secs passes, then are
// cancelled (DEADLINE_EXCEEDED), and their names, temporary directories
// and upload slots are free: the same name submits, and the goroutines
// return to what they were.
func TestInProcessStalledUploadsAreCappedThenCancelled(t *testing.T) {
	const maxUploads, streams, idle = 3, 20, 2 * time.Second
	z := testcluster.StartZooKeeper(t)
	s := startWith(t, z.Addr(), t.TempDir(), func(c *configs.Config) {
		c.NimbusMaxUploads = maxUploads
		c.NimbusUploadIdleTimeout = idle
	})
	awaitLeading(t, s)
	cl := sdk(t, s)
	submitSpec(t, cl, "warmup") // every part a submission uses has started
	conn := dial(t, s)
	baseline := runtime.NumGoroutine()

	type answer struct {
		name  string
		err   error
		after time.Duration
	}
	answers := make(chan answer, streams)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	began := time.Now()
	for i := range streams {
		name := fmt.Sprintf("stalled-%02d", i)
		go func() {
			err := func() error {
				stream, err := nimbusv1.NewNimbusServiceClient(conn).SubmitTopology(ctx)
				if err != nil {
					return err
				}
				if err := stream.Send(&nimbusv1.SubmitTopologyRequest{Part: &nimbusv1.SubmitTopologyRequest_Spec{Spec: smallSpec(name)}}); err != nil {
					return err
				}
				// Stalled: no chunk, no trailer; wait for the server's answer.
				return stream.RecvMsg(new(nimbusv1.SubmitTopologyResponse))
			}()
			answers <- answer{name, err, time.Since(began)}
		}()
	}

	// Beyond the cap: refused at once.
	admitted := map[string]bool{}
	for i := range streams {
		admitted[fmt.Sprintf("stalled-%02d", i)] = true
	}
	for range streams - maxUploads {
		a := <-answers
		checkRefused(t, a.err, codes.ResourceExhausted, configs.KeyNimbusMaxUploads, "nothing was stored")
		if a.after >= idle {
			t.Fatalf("%s refused after %v, not at once", a.name, a.after)
		}
		delete(admitted, a.name)
	}
	// The ones let in hold a temporary directory each, and their names.
	if got := tmpEntries(t, s); len(got) != maxUploads {
		t.Fatalf("the store's tmp holds %v while %d uploads stall", got, maxUploads)
	}
	for name := range admitted {
		checkRefused(t, rawSubmit(ctx, conn, smallSpec(name), []byte("x")), codes.AlreadyExists)
		break
	}
	checkRefused(t, rawSubmit(ctx, conn, smallSpec("another"), []byte("x")), codes.ResourceExhausted, configs.KeyNimbusMaxUploads)
	testcluster.WaitFor(t, time.Second, "two goroutines per stalled upload", func() error {
		if n := submitGoroutines(); n != 2*maxUploads {
			return fmt.Errorf("%d in the submit path", n)
		}
		return nil
	})

	// Then the silence ends them.
	for range maxUploads {
		a := <-answers
		checkRefused(t, a.err, codes.DeadlineExceeded, configs.KeyNimbusUploadIdleTimeout, "nothing was stored")
		if !admitted[a.name] || a.after < idle {
			t.Fatalf("%s (admitted: %v) cancelled after %v, idle timeout %v", a.name, admitted[a.name], a.after, idle)
		}
	}
	if got := tmpEntries(t, s); len(got) != 0 {
		t.Fatalf("the store's tmp holds %v after the uploads were cancelled", got)
	}
	// None of the submit path's goroutines is left, and the total is back
	// to where it was, give or take the background loops' own (a watch's
	// forwarder, a connection's reader come and go).
	const slack = 4
	testcluster.WaitFor(t, 10*time.Second, "goroutines back to their baseline", func() error {
		if n := submitGoroutines(); n != 0 {
			return fmt.Errorf("%d goroutines in the submit path", n)
		}
		if n := runtime.NumGoroutine(); n > baseline+slack {
			return fmt.Errorf("%d goroutines, %d before the streams", n, baseline)
		}
		return nil
	})
	checkNothingCommitted(t, s, mustID(t, s, "warmup"))
	for name := range admitted {
		submitSpec(t, cl, name) // the name is free again
	}
}

// mustID is the id of the topology named name.
func mustID(t *testing.T, s *Server, name string) string {
	t.Helper()
	id, _, err := s.view.ByName(name)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// mountTmpfs mounts a tmpfs of size bytes on a new directory, unmounted
// when the test ends (after everything started later has stopped). The
// test must run as root: storage failures are tested on a real filesystem.
func mountTmpfs(t *testing.T, size int64) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		t.Fatalf("mount a %d-byte tmpfs on %s (the test needs root): %v", size, dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// remount makes the filesystem at dir read-only, or writable again.
func remount(t *testing.T, dir string, readOnly bool) {
	t.Helper()
	flags := uintptr(syscall.MS_REMOUNT)
	if readOnly {
		flags |= syscall.MS_RDONLY
	}
	if err := syscall.Mount("", dir, "", flags, ""); err != nil {
		t.Fatalf("remount %s (read-only %v): %v", dir, readOnly, err)
	}
}

// fill writes a file of n bytes at path.
func fill(t *testing.T, path string, n int64) {
	t.Helper()
	if err := os.WriteFile(path, make([]byte, n), 0o644); err != nil {
		t.Fatal(err)
	}
}

// On a real 16 MiB filesystem: an artifact the store has
// no room for is refused before the upload (RESOURCE_EXHAUSTED, health
// unchanged). A disk that fills during an upload answers
// RESOURCE_EXHAUSTED, nothing left behind, and health goes NOT_SERVING
// until a probe write succeeds. A disk that others filled is found full at
// the next submission: RESOURCE_EXHAUSTED and NOT_SERVING until space is
// freed, then SERVING and submissions succeed again. A read-only store
// answers UNAVAILABLE and NOT_SERVING until it is writable again. Each
// answer says nothing was stored. With no submission at all, a store that
// becomes read-only or full still turns health NOT_SERVING.
func TestInProcessFullOrReadOnlyStore(t *testing.T) {
	const size = 16 << 20
	dir := mountTmpfs(t, size)
	z := testcluster.StartZooKeeper(t)
	s := startWith(t, z.Addr(), dir, nil)
	awaitLeading(t, s)
	cl := sdk(t, s)
	conn := dial(t, s)
	waitServing(t, conn, healthpb.HealthCheckResponse_SERVING)
	submit := func(name string, n int) error {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		_, err := cl.SubmitTopology(ctx, smallSpec(name), bytes.NewReader(make([]byte, n)), int64(n), nil)
		return err
	}

	// 1. Declared too big for the store: refused before the upload (had
	// the chunk been read, the size it declared would not match).
	big := smallSpec("big")
	big.ArtifactBytes = 14 << 20
	checkRefused(t, rawSubmit(t.Context(), conn, big, []byte("x")), codes.ResourceExhausted, "bytes free", "nothing was stored")
	// The SDK declares the size itself.
	checkRefused(t, submit("big", 14<<20), codes.ResourceExhausted, "bytes free", "nothing was stored")
	// A blob's declared size too.
	_, blobErr := cl.CreateBlob(t.Context(), "big", bytes.NewReader(make([]byte, 14<<20)), client.BlobOptions{Size: 14 << 20})
	checkRefused(t, blobErr, codes.ResourceExhausted, "bytes free", "nothing was stored")
	if got := servingStatus(t, conn); got != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health %v after refusing one big artifact", got)
	}

	// 2. The disk fills during an upload whose size was not declared.
	watch, err := healthpb.NewHealthClient(conn).Watch(t.Context(), &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	free, err := s.store.Free()
	if err != nil {
		t.Fatal(err)
	}
	filler := filepath.Join(dir, "filler")
	fill(t, filler, free-storeHeadroom-(1<<20)) // room for the headroom and 1 MiB more
	chunk := make([]byte, 1<<20)
	err = rawSubmit(t.Context(), conn, smallSpec("fills"), chunk, chunk, chunk, chunk, chunk, chunk, chunk)
	checkRefused(t, err, codes.ResourceExhausted, "no space left on device", "nothing was stored")
	if got := tmpEntries(t, s); len(got) != 0 {
		t.Fatalf("the store's tmp holds %v", got)
	}
	// NOT_SERVING, then SERVING once a probe passes (the failed upload's
	// bytes are gone, so there is room again).
	for _, want := range []healthpb.HealthCheckResponse_ServingStatus{healthpb.HealthCheckResponse_NOT_SERVING, healthpb.HealthCheckResponse_SERVING} {
		for {
			resp, err := watch.Recv()
			if err != nil {
				t.Fatal(err)
			}
			if resp.GetStatus() == want {
				break
			}
		}
	}

	// 3. Others filled the disk: the next submission finds it full.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if free, err = s.store.Free(); err != nil {
		t.Fatal(err)
	}
	fill(t, filler, free-(1<<20))
	checkRefused(t, submit("full", 1000), codes.ResourceExhausted, "nothing was stored")
	waitServing(t, conn, healthpb.HealthCheckResponse_NOT_SERVING)
	checkRefused(t, submit("full", 1000), codes.ResourceExhausted, "has not passed a probe", "nothing was stored")
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitServing(t, conn, healthpb.HealthCheckResponse_SERVING)
	if err := submit("fits", 1000); err != nil {
		t.Fatal(err)
	}

	// 4. A read-only store.
	remount(t, dir, true)
	checkRefused(t, submit("readonly", 1000), codes.Unavailable, "read-only", "nothing was stored")
	waitServing(t, conn, healthpb.HealthCheckResponse_NOT_SERVING)
	remount(t, dir, false)
	waitServing(t, conn, healthpb.HealthCheckResponse_SERVING)
	if err := submit("readonly", 1000); err != nil {
		t.Fatal(err)
	}

	// 5. With no submission, as on a follower: a store that becomes
	// read-only, or full, is found so by the periodic check.
	remount(t, dir, true)
	waitServing(t, conn, healthpb.HealthCheckResponse_NOT_SERVING)
	remount(t, dir, false)
	waitServing(t, conn, healthpb.HealthCheckResponse_SERVING)
	if free, err = s.store.Free(); err != nil {
		t.Fatal(err)
	}
	fill(t, filler, free-(1<<20))
	waitServing(t, conn, healthpb.HealthCheckResponse_NOT_SERVING)
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitServing(t, conn, healthpb.HealthCheckResponse_SERVING)

	checkNothingCommitted(t, s, mustID(t, s, "fits"), mustID(t, s, "readonly"))
	if got := tmpEntries(t, s); len(got) != 0 {
		t.Fatalf("the store's tmp holds %v", got)
	}
}

// submitGoroutines counts the goroutines in the submit path: a submission's
// handler, and the goroutine receiving its stream.
func submitGoroutines() int {
	buf := make([]byte, 1<<24)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "nimbus.(*service).SubmitTopology") || strings.Contains(g, "nimbus.(*idleReceiver[...]).receive") {
			n++
		}
	}
	return n
}
