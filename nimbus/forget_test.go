package nimbus

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nimbusha/nimbus/apierr"
	"github.com/nimbusha/nimbus/apistatus"
	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/codedistributor"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	"github.com/nimbusha/nimbus/leader"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// A write that a concurrent change failed (ZooKeeper's NoNode, NotEmpty or
// BadVersion on one op) answers FAILED_PRECONDITION naming what changed;
// any other failure keeps its own meaning.
func TestForgetChangedMeanwhile(t *testing.T) {
	f := &forgetting{id: "t-1-1", what: []string{"its LOST mark", "its StormBase", "its code distribution"}}
	failedAt := func(i int, err error) []zk.MultiResponse {
		res := make([]zk.MultiResponse, len(f.what))
		for j := i; j < len(res); j++ {
			res[j].Error = zk.ErrAPIError // not run
		}
		res[i].Error = err
		return res
	}
	for _, tc := range []struct {
		res  []zk.MultiResponse
		err  error
		code codes.Code
		want string
	}{
		{failedAt(0, zk.ErrNoNode), fmt.Errorf("cluster: multi op 0: %w", zk.ErrNoNode), codes.FailedPrecondition,
			"t-1-1 changed while it was being forgotten: its LOST mark was removed"},
		{failedAt(1, zk.ErrBadVersion), fmt.Errorf("leader: fenced write: op 1: %w", zk.ErrBadVersion), codes.FailedPrecondition,
			"its StormBase was rewritten"},
		{failedAt(2, zk.ErrNotEmpty), fmt.Errorf("cluster: multi op 2: %w", zk.ErrNotEmpty), codes.FailedPrecondition,
			"its code distribution gained a replica"},
		{nil, fmt.Errorf("%w (epoch 3)", leader.ErrFenced), codes.Unavailable, "write fenced"},
		{nil, fmt.Errorf("%w: the write may still apply", cluster.ErrOutcomeUnknown), codes.Unknown, "outcome unknown"},
	} {
		st := status.Convert(apistatus.ToStatus(changedMeanwhile(f, tc.res, tc.err)))
		if st.Code() != tc.code || !strings.Contains(st.Message(), tc.want) {
			t.Errorf("%v: %v %q, want %v containing %q", tc.err, st.Code(), st.Message(), tc.code, tc.want)
		}
	}
}

// fakeSupervisor is a supervisor's CodeService that serves the meta of one
// topology (while holds is set) and never its files, so the nimbus cannot
// recover the code from it and its LOST mark stays.
type fakeSupervisor struct {
	nimbusv1.UnimplementedCodeServiceServer
	id    string
	meta  []byte
	holds atomic.Bool
}

func (f *fakeSupervisor) GetCodeMeta(_ context.Context, req *nimbusv1.GetCodeMetaRequest) (*nimbusv1.GetCodeMetaResponse, error) {
	if req.GetTopologyId() != f.id || !f.holds.Load() {
		return nil, status.Error(codes.NotFound, "not held")
	}
	return &nimbusv1.GetCodeMetaResponse{Meta: f.meta}, nil
}

// writeLostGhost writes a StormBase for code no nimbus holds, with its
// LOST mark, and returns its digest. The mark comes first, and the
// StormBase once this nimbus's cache has it, so the nimbus never sees the
// ghost unmarked (it would leave the leader queue, and the leader would
// schedule it).
func writeLostGhost(t *testing.T, s *Server, id string, meta []byte) []byte {
	t.Helper()
	sum := sha256.Sum256(meta)
	digest := sum[:]
	conn, paths, acl := s.sess.Conn(), s.sess.Paths(), s.sess.ACL()
	mark := &clusterv1.LostMark{CodeMetaDigest: digest, Reason: "written by the test"}
	if _, err := conn.Create(paths.Lost(id), cluster.Encode(mark), 0, acl); err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, 10*time.Second, "the mark in the cache", func() error {
		if _, ok := s.view.Lost.Snapshot()[id]; !ok {
			return errors.New("not yet")
		}
		return nil
	})
	base := &clusterv1.StormBase{Name: id, Status: clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE, NumWorkers: 1,
		CodeMetaDigest: digest, LaunchTimeUnixSecs: time.Now().Unix(), Owner: "nobody"}
	if _, err := conn.Create(paths.Storm(id), cluster.Encode(base), 0, acl); err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, 10*time.Second, "the ghost in the cache", func() error {
		if _, ok := s.view.Storms.Snapshot()[id]; !ok {
			return errors.New("not yet")
		}
		return nil
	})
	return digest
}

func forget(t *testing.T, s *Server, name string) (*nimbusv1.ForgetTopologyResponse, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	return sdk(t, s).ForgetTopology(ctx, name, "test")
}

// Forget refuses a topology that is not LOST, and one whose LOST mark a
// supervisor that serves the code again makes stale (naming it), or that
// a supervisor cannot be asked about; once no supervisor may hold it, it
// removes it, with an assignment written just before.
func TestForgetAsksTheSupervisors(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	s := startServer(t, z.Addr())
	awaitLeading(t, s)
	conn, paths := s.sess.Conn(), s.sess.Paths()

	submitSpec(t, sdk(t, s), "alive")
	if _, err := forget(t, s, "alive"); status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "is not LOST") {
		t.Fatalf("forget of a live topology: %v, want FailedPrecondition: is not LOST", err)
	}

	const id = "ghost-1-1"
	meta := cluster.Encode(&clusterv1.CodeMeta{TopologyId: id, Files: []*clusterv1.CodeFile{{Name: "artifact", Size: 1}}})
	digest := writeLostGhost(t, s, id, meta)
	sup := &fakeSupervisor{id: id, meta: meta}
	sup.holds.Store(true)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	nimbusv1.RegisterCodeServiceServer(srv, sup)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	info := &clusterv1.SupervisorInfo{SupervisorId: "sup-a", Host: "127.0.0.1", CodePort: int32(lis.Addr().(*net.TCPAddr).Port)}
	if _, err := conn.Create(paths.Supervisor("sup-a"), cluster.Encode(info), zk.FlagEphemeral, s.sess.ACL()); err != nil {
		t.Fatal(err)
	}

	_, err = forget(t, s, id)
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "supervisor sup-a at "+lis.Addr().String()+" holds the code of "+id+" again") ||
		!strings.Contains(err.Error(), "lifts by itself") {
		t.Fatalf("forget of code a supervisor serves: %v, want FailedPrecondition naming sup-a", err)
	}
	sup.holds.Store(false)
	srv.Stop() // registered, but its code port does not answer
	if _, err = forget(t, s, id); status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "did not say whether it holds "+id) {
		t.Fatalf("forget while a supervisor cannot be asked: %v, want FailedPrecondition", err)
	}
	for _, path := range []string{paths.Storm(id), paths.Lost(id)} {
		if ok, _, err := conn.Exists(path); err != nil || !ok {
			t.Fatalf("%s gone after a refused forget (%v)", path, err)
		}
	}

	if err := conn.Delete(paths.Supervisor("sup-a"), -1); err != nil {
		t.Fatal(err)
	}
	a := &clusterv1.Assignment{CodeMetaDigest: digest}
	if _, err := conn.Create(paths.Assignment(id), cluster.Encode(a), 0, s.sess.ACL()); err != nil {
		t.Fatal(err)
	}
	resp, err := forget(t, s, id)
	if err != nil || resp.GetTopologyId() != id || !resp.GetFenced() {
		t.Fatalf("forget once no supervisor holds it: %v, %v; want it forgotten under the leader's fence", resp, err)
	}
	for _, path := range []string{paths.Storm(id), paths.Lost(id), paths.Assignment(id)} {
		if ok, _, err := conn.Exists(path); err != nil || ok {
			t.Fatalf("%s still exists after forget (%v)", path, err)
		}
	}
}

// A change between a forget's reads and its write (a nimbus got the code
// back: it deleted the mark, or registered a replica) fails the write on
// ZooKeeper, and the answer names what changed; nothing is removed.
func TestForgetOfATopologyChangedMeanwhile(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	s := startServer(t, z.Addr())
	awaitLeading(t, s)
	conn, paths, acl := s.sess.Conn(), s.sess.Paths(), s.sess.ACL()
	for _, tc := range []struct {
		id     string
		change func(digest []byte) error
		want   string
	}{
		{"replicated-1-1", func(digest []byte) error {
			r := &clusterv1.ReplicaInfo{Host: "127.0.0.1", Port: 1, CodeMetaDigest: digest}
			_, err := conn.Create(paths.Replica("replicated-1-1", "127.0.0.1:1"), cluster.Encode(r), 0, acl)
			return err
		}, "its code distribution gained a replica"},
		// The mark and the StormBase go together (a kill's removal): the
		// ghost never blocks leadership, so the write stays fenced.
		{"unmarked-1-1", func([]byte) error {
			_, err := conn.Multi(&zk.DeleteRequest{Path: paths.Lost("unmarked-1-1"), Version: -1},
				&zk.DeleteRequest{Path: paths.Storm("unmarked-1-1"), Version: -1})
			return err
		}, "its LOST mark was removed"},
	} {
		digest := writeLostGhost(t, s, tc.id, []byte(tc.id))
		d := &clusterv1.CodeDistribution{CodeMetaDigest: digest}
		if _, err := conn.Create(paths.Distribution(tc.id), cluster.Encode(d), 0, acl); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		f, err := s.svc.forgetOps(ctx, tc.id)
		if err != nil {
			t.Fatal(err)
		}
		if err := tc.change(digest); err != nil {
			t.Fatal(err)
		}
		fenced, res, err := s.svc.forgetWrite(ctx, f.ops)
		cancel()
		st := status.Convert(apistatus.ToStatus(changedMeanwhile(f, res, err)))
		if !fenced || st.Code() != codes.FailedPrecondition || !strings.Contains(st.Message(), tc.id+" changed while it was being forgotten: "+tc.want) {
			t.Fatalf("%s: fenced %v, %v %q; want FailedPrecondition: %s", tc.id, fenced, st.Code(), st.Message(), tc.want)
		}
		if ok, _, err := conn.Exists(paths.Distribution(tc.id)); err != nil || !ok {
			t.Fatalf("%s: the distribution is gone after a failed forget (%v)", tc.id, err)
		}
	}
}

// supervisorsHolding ends when the request's deadline does, whatever the
// supervisors do.
func TestForgetAsksSupervisorsWithinTheDeadline(t *testing.T) {
	hang := func(string) (nimbusv1.CodeServiceClient, func(), error) { return hangingCode{}, func() {}, nil }
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	start := time.Now()
	err := supervisorsHolding(ctx, hang, "t-1-1", []byte{1}, []codedistributor.Source{{Addr: "a:1", Supervisor: "a"}})
	if elapsed := time.Since(start); elapsed > 900*time.Millisecond || !errors.Is(err, apierr.ErrWrongStatus) || !strings.Contains(err.Error(), "supervisor a at a:1 did not say") {
		t.Fatalf("after %v: %v; want a refusal naming the supervisor within half the deadline", elapsed, err)
	}
}

// hangingCode is a CodeService that answers only when asked to stop.
type hangingCode struct{ nimbusv1.CodeServiceClient }

func (hangingCode) GetCodeMeta(ctx context.Context, _ *nimbusv1.GetCodeMetaRequest, _ ...grpc.CallOption) (*nimbusv1.GetCodeMetaResponse, error) {
	<-ctx.Done()
	return nil, status.FromContextError(ctx.Err()).Err()
}
