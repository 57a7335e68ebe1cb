package fakenimbus

import (
	"context"
	"slices"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// SubmitStream is the server's side of a SubmitTopology stream.
type SubmitStream = grpc.ClientStreamingServer[nimbusv1.SubmitTopologyRequest, nimbusv1.SubmitTopologyResponse]

// Server is a fake NimbusService. Each RPC calls its On func, which the
// test sets before the server serves (and must not change after); an RPC
// whose func is nil answers Unimplemented. Every call is counted and its
// request recorded first, by the RPC's method name ("GetLeader",
// "SubmitTopology"...): a submission is recorded as its spec, when the
// handler receives it. The zero Server answers Unimplemented to all.
type Server struct {
	nimbusv1.UnimplementedNimbusServiceServer

	OnGetLeader       func() (*nimbusv1.GetLeaderResponse, error)
	OnGetClusterInfo  func() (*nimbusv1.GetClusterInfoResponse, error)
	OnGetTopologyInfo func(*nimbusv1.GetTopologyInfoRequest) (*nimbusv1.GetTopologyInfoResponse, error)
	OnGetTopologyConf func(*nimbusv1.GetTopologyConfRequest) (*nimbusv1.GetTopologyConfResponse, error)
	OnGetNimbusConfig func() (*nimbusv1.GetNimbusConfigResponse, error)
	OnActivate        func(*nimbusv1.ActivateTopologyRequest) error
	OnDeactivate      func(*nimbusv1.DeactivateTopologyRequest) error
	OnKill            func(*nimbusv1.KillTopologyRequest) error
	OnRebalance       func(*nimbusv1.RebalanceTopologyRequest) error
	OnSubmit          func(SubmitStream) error
	// The blob RPCs' funcs; Blobs.Serve sets them all to an in-memory
	// store. A blob upload is recorded as its header.
	OnCreateBlob  func(CreateBlobStream) error
	OnUpdateBlob  func(UpdateBlobStream) error
	OnReadBlob    func(*nimbusv1.ReadBlobRequest, ReadBlobStream) error
	OnDeleteBlob  func(*nimbusv1.DeleteBlobRequest) error
	OnListBlobs   func(*nimbusv1.ListBlobsRequest) (*nimbusv1.ListBlobsResponse, error)
	OnSetBlobMeta func(*nimbusv1.SetBlobMetaRequest) (*nimbusv1.SetBlobMetaResponse, error)

	mu       sync.Mutex
	calls    map[string]int
	requests []request

	submission submission // Receive's
}

// request is one recorded request.
type request struct {
	rpc string
	msg proto.Message
}

// Calls returns how many calls of rpc (a method name) the server has had,
// counting the one being handled.
func (s *Server) Calls(rpc string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[rpc]
}

// Requests returns the requests received so far of the RPCs named, in the
// order received; with no name, of every RPC.
func (s *Server) Requests(rpcs ...string) []proto.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []proto.Message
	for _, r := range s.requests {
		if len(rpcs) == 0 || slices.Contains(rpcs, r.rpc) {
			out = append(out, r.msg)
		}
	}
	return out
}

// called counts a call of rpc.
func (s *Server) called(rpc string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.calls == nil {
		s.calls = map[string]int{}
	}
	s.calls[rpc]++
}

func (s *Server) record(rpc string, msg proto.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, request{rpc, msg})
}

// unary counts and records a call, then answers with f, or Unimplemented
// if f is nil.
func unary[Req proto.Message, Resp any](s *Server, rpc string, req Req, f func(Req) (Resp, error)) (Resp, error) {
	s.called(rpc)
	s.record(rpc, req)
	if f == nil {
		var zero Resp
		return zero, status.Error(codes.Unimplemented, rpc)
	}
	return f(req)
}

// answer adapts an On func that answers only an error to unary's form:
// resp is the answer when the error is nil.
func answer[Req any, Resp any](f func(Req) error, resp Resp) func(Req) (Resp, error) {
	if f == nil {
		return nil
	}
	return func(req Req) (Resp, error) { return resp, f(req) }
}

// ignoreRequest adapts an On func of an RPC whose request is empty to
// unary's form.
func ignoreRequest[Req any, Resp any](f func() (Resp, error)) func(Req) (Resp, error) {
	if f == nil {
		return nil
	}
	return func(Req) (Resp, error) { return f() }
}

// The NimbusService methods below count and record each call, then answer
// with the RPC's On func, or Unimplemented.

// GetLeader answers with OnGetLeader.
func (s *Server) GetLeader(_ context.Context, req *nimbusv1.GetLeaderRequest) (*nimbusv1.GetLeaderResponse, error) {
	return unary(s, "GetLeader", req, ignoreRequest[*nimbusv1.GetLeaderRequest](s.OnGetLeader))
}

// GetClusterInfo answers with OnGetClusterInfo.
func (s *Server) GetClusterInfo(_ context.Context, req *nimbusv1.GetClusterInfoRequest) (*nimbusv1.GetClusterInfoResponse, error) {
	return unary(s, "GetClusterInfo", req, ignoreRequest[*nimbusv1.GetClusterInfoRequest](s.OnGetClusterInfo))
}

// GetTopologyInfo answers with OnGetTopologyInfo.
func (s *Server) GetTopologyInfo(_ context.Context, req *nimbusv1.GetTopologyInfoRequest) (*nimbusv1.GetTopologyInfoResponse, error) {
	return unary(s, "GetTopologyInfo", req, s.OnGetTopologyInfo)
}

// GetTopologyConf answers with OnGetTopologyConf.
func (s *Server) GetTopologyConf(_ context.Context, req *nimbusv1.GetTopologyConfRequest) (*nimbusv1.GetTopologyConfResponse, error) {
	return unary(s, "GetTopologyConf", req, s.OnGetTopologyConf)
}

// GetNimbusConfig answers with OnGetNimbusConfig.
func (s *Server) GetNimbusConfig(_ context.Context, req *nimbusv1.GetNimbusConfigRequest) (*nimbusv1.GetNimbusConfigResponse, error) {
	return unary(s, "GetNimbusConfig", req, ignoreRequest[*nimbusv1.GetNimbusConfigRequest](s.OnGetNimbusConfig))
}

// ActivateTopology answers with OnActivate.
func (s *Server) ActivateTopology(_ context.Context, req *nimbusv1.ActivateTopologyRequest) (*nimbusv1.ActivateTopologyResponse, error) {
	return unary(s, "ActivateTopology", req, answer(s.OnActivate, &nimbusv1.ActivateTopologyResponse{}))
}

// DeactivateTopology answers with OnDeactivate.
func (s *Server) DeactivateTopology(_ context.Context, req *nimbusv1.DeactivateTopologyRequest) (*nimbusv1.DeactivateTopologyResponse, error) {
	return unary(s, "DeactivateTopology", req, answer(s.OnDeactivate, &nimbusv1.DeactivateTopologyResponse{}))
}

// KillTopology answers with OnKill.
func (s *Server) KillTopology(_ context.Context, req *nimbusv1.KillTopologyRequest) (*nimbusv1.KillTopologyResponse, error) {
	return unary(s, "KillTopology", req, answer(s.OnKill, &nimbusv1.KillTopologyResponse{}))
}

// RebalanceTopology answers with OnRebalance.
func (s *Server) RebalanceTopology(_ context.Context, req *nimbusv1.RebalanceTopologyRequest) (*nimbusv1.RebalanceTopologyResponse, error) {
	return unary(s, "RebalanceTopology", req, answer(s.OnRebalance, &nimbusv1.RebalanceTopologyResponse{}))
}

// SubmitTopology hands the stream to OnSubmit; the spec is recorded when
// OnSubmit receives it.
func (s *Server) SubmitTopology(stream SubmitStream) error {
	const rpc = "SubmitTopology"
	s.called(rpc)
	if s.OnSubmit == nil {
		return status.Error(codes.Unimplemented, rpc)
	}
	return s.OnSubmit(recordingStream{stream, s})
}

// recordingStream records the spec of a submission as it is received.
type recordingStream struct {
	SubmitStream
	s *Server
}

func (r recordingStream) Recv() (*nimbusv1.SubmitTopologyRequest, error) {
	msg, err := r.SubmitStream.Recv()
	if spec := msg.GetSpec(); spec != nil {
		r.s.record("SubmitTopology", spec)
	}
	return msg, err
}

// CreateBlob hands the stream to OnCreateBlob; the header is recorded
// when OnCreateBlob receives it.
func (s *Server) CreateBlob(stream CreateBlobStream) error {
	const rpc = "CreateBlob"
	s.called(rpc)
	if s.OnCreateBlob == nil {
		return status.Error(codes.Unimplemented, rpc)
	}
	return s.OnCreateBlob(recordingUpload[nimbusv1.CreateBlobRequest, nimbusv1.CreateBlobResponse]{stream, s, rpc})
}

// UpdateBlob hands the stream to OnUpdateBlob; the header is recorded
// when OnUpdateBlob receives it.
func (s *Server) UpdateBlob(stream UpdateBlobStream) error {
	const rpc = "UpdateBlob"
	s.called(rpc)
	if s.OnUpdateBlob == nil {
		return status.Error(codes.Unimplemented, rpc)
	}
	return s.OnUpdateBlob(recordingUpload[nimbusv1.UpdateBlobRequest, nimbusv1.UpdateBlobResponse]{stream, s, rpc})
}

// ReadBlob answers with OnReadBlob.
func (s *Server) ReadBlob(req *nimbusv1.ReadBlobRequest, stream ReadBlobStream) error {
	const rpc = "ReadBlob"
	s.called(rpc)
	s.record(rpc, req)
	if s.OnReadBlob == nil {
		return status.Error(codes.Unimplemented, rpc)
	}
	return s.OnReadBlob(req, stream)
}

// DeleteBlob answers with OnDeleteBlob.
func (s *Server) DeleteBlob(_ context.Context, req *nimbusv1.DeleteBlobRequest) (*nimbusv1.DeleteBlobResponse, error) {
	return unary(s, "DeleteBlob", req, answer(s.OnDeleteBlob, &nimbusv1.DeleteBlobResponse{}))
}

// ListBlobs answers with OnListBlobs.
func (s *Server) ListBlobs(_ context.Context, req *nimbusv1.ListBlobsRequest) (*nimbusv1.ListBlobsResponse, error) {
	return unary(s, "ListBlobs", req, s.OnListBlobs)
}

// SetBlobMeta answers with OnSetBlobMeta.
func (s *Server) SetBlobMeta(_ context.Context, req *nimbusv1.SetBlobMetaRequest) (*nimbusv1.SetBlobMetaResponse, error) {
	return unary(s, "SetBlobMeta", req, s.OnSetBlobMeta)
}

// blobUpload is a blob upload's message: its header, a chunk or the
// trailer.
type blobUpload interface {
	GetHeader() *nimbusv1.BlobHeader
}

// recordingUpload records the header of a blob upload as it is received.
type recordingUpload[Req any, Resp any] struct {
	grpc.ClientStreamingServer[Req, Resp]
	s   *Server
	rpc string
}

func (r recordingUpload[Req, Resp]) Recv() (*Req, error) {
	msg, err := r.ClientStreamingServer.Recv()
	if m, ok := any(msg).(blobUpload); ok && msg != nil {
		if h := m.GetHeader(); h != nil {
			r.s.record(r.rpc, h)
		}
	}
	return msg, err
}
