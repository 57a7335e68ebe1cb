package fakenimbus

import (
	"io"
	"slices"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// Submission is what one SubmitTopology stream carried to Receive.
type Submission struct {
	Spec        *nimbusv1.TopologySpec
	ChunkLens   []int  // the length of each chunk, in order
	Artifact    []byte // the chunks, joined
	Trailer     []byte // the trailer's SHA-256; nil if no trailer came
	HadDeadline bool   // the stream's context had a deadline
}

// submission is the last Submission of a Server, which Receive fills
// under mu, held while its handler runs.
type submission struct {
	mu   sync.Mutex
	last Submission
}

// Receive returns an OnSubmit that reads a whole submission (spec,
// chunks, trailer, then the end of the stream) into the server's
// LastSubmission and answers with resp. A message after the trailer
// answers InvalidArgument.
func (s *Server) Receive(resp *nimbusv1.SubmitTopologyResponse) func(SubmitStream) error {
	return func(stream SubmitStream) error {
		got := &s.submission
		got.mu.Lock()
		defer got.mu.Unlock()
		_, hasDeadline := stream.Context().Deadline()
		got.last = Submission{HadDeadline: hasDeadline}
		for {
			msg, err := stream.Recv()
			if err != nil {
				return err
			}
			switch part := msg.GetPart().(type) {
			case *nimbusv1.SubmitTopologyRequest_Spec:
				got.last.Spec = part.Spec
			case *nimbusv1.SubmitTopologyRequest_Chunk:
				got.last.ChunkLens = append(got.last.ChunkLens, len(part.Chunk))
				got.last.Artifact = append(got.last.Artifact, part.Chunk...)
			case *nimbusv1.SubmitTopologyRequest_Trailer:
				got.last.Trailer = part.Trailer.GetSha256()
				if _, err := stream.Recv(); err != io.EOF {
					return status.Errorf(codes.InvalidArgument, "message after trailer: %v", err)
				}
				return stream.SendAndClose(resp)
			}
		}
	}
}

// LastSubmission returns what the latest submission handled by Receive
// carried, the zero Submission if none. It waits for a Receive handler
// that is still running to return.
func (s *Server) LastSubmission() Submission {
	got := &s.submission
	got.mu.Lock()
	defer got.mu.Unlock()
	last := got.last
	last.ChunkLens = slices.Clone(last.ChunkLens)
	last.Artifact = slices.Clone(last.Artifact)
	last.Trailer = slices.Clone(last.Trailer)
	return last
}

// NotLeaderAfterFirstChunk is an OnSubmit of a follower that reads the
// spec and one chunk, so the client has read from its artifact, then
// answers NotLeader(leader).
func NotLeaderAfterFirstChunk(leader string) func(SubmitStream) error {
	return func(stream SubmitStream) error {
		for range 2 {
			if _, err := stream.Recv(); err != nil {
				return err
			}
		}
		return NotLeader(leader)
	}
}
