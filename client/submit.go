package client

import (
	"context"
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/proto"

	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// MaxChunkSize is the largest artifact chunk SubmitTopology sends: the
// API's limit.
const MaxChunkSize = 1 << 20

// SubmitTopology uploads a topology to the leader: spec, then size bytes of
// artifact in chunks of at most MaxChunkSize, then a trailer with their
// SHA-256, computed while streaming. It reads exactly size bytes; an
// artifact that ends sooner fails the submission, which the server then
// never stores. progress, if not nil, is called after each chunk with the
// bytes sent so far and size. The spec is sent with artifact_bytes set to
// size (spec itself is not modified), so the leader refuses an artifact it
// has no room for before the upload starts: ResourceExhausted, which is
// not retried, like every limit the leader answers with.
//
// It blocks until the leader acknowledges, which happens after the code is
// stored on topology.min.replication.count nimbuses or the replication
// wait ends, so ctx must allow for that; WithCallTimeout does not apply.
//
// A submission is not idempotent, so it is retried only where no nimbus
// can have stored it:
//   - Finding the leader and opening the stream are retried, within the
//     retry budget, on Unavailable (no leader yet, leader unreachable):
//     nothing has been sent.
//   - A NOT_LEADER answer is followed to the leader it names, at any point
//     of the upload, because a follower never stores a submission. The
//     upload restarts from the beginning (and so does progress), which
//     needs the artifact again: if it is an io.Seeker (an *os.File, a
//     *bytes.Reader) it is rewound; otherwise the redirect is followed only
//     if nothing was read yet, and the NOT_LEADER error is returned if not.
//   - ABORTED is the leader's word that it lost leadership before it
//     committed the topology and that nothing of it remains: the upload is
//     sent again (rewound as above) to the next leader, within the retry
//     budget.
//   - Nothing else is retried. Once the stream is open at the leader, any
//     failure, Unavailable and DeadlineExceeded included, may come after
//     the leader committed the topology; a blind retry could then submit
//     it twice. The error is returned for the caller to decide:
//     GetTopologyInfo tells whether the topology exists, and submitting a
//     name that is live fails with AlreadyExists.
func (c *Client) SubmitTopology(ctx context.Context, spec *nimbusv1.TopologySpec, artifact io.Reader, size int64, progress func(sent, total int64)) (*nimbusv1.SubmitTopologyResponse, error) {
	switch {
	case spec == nil:
		return nil, errors.New("client: SubmitTopology: nil spec")
	case size < 0:
		return nil, fmt.Errorf("client: SubmitTopology: negative artifact size %d", size)
	case artifact == nil && size > 0:
		return nil, errors.New("client: SubmitTopology: nil artifact")
	}
	spec = proto.CloneOf(spec)
	spec.ArtifactBytes = size
	var sent func(int64)
	if progress != nil {
		sent = func(n int64) { progress(n, size) }
	}
	return uploadToLeader(ctx, c, upload[nimbusv1.SubmitTopologyRequest, nimbusv1.SubmitTopologyResponse]{
		rpc:  "SubmitTopology",
		what: "artifact",
		open: nimbusv1.NimbusServiceClient.SubmitTopology,
		header: func() *nimbusv1.SubmitTopologyRequest {
			return &nimbusv1.SubmitTopologyRequest{Part: &nimbusv1.SubmitTopologyRequest_Spec{Spec: spec}}
		},
		chunk: func(b []byte) *nimbusv1.SubmitTopologyRequest {
			return &nimbusv1.SubmitTopologyRequest{Part: &nimbusv1.SubmitTopologyRequest_Chunk{Chunk: b}}
		},
		trailer: func(sum []byte) *nimbusv1.SubmitTopologyRequest {
			return &nimbusv1.SubmitTopologyRequest{Part: &nimbusv1.SubmitTopologyRequest_Trailer{Trailer: &nimbusv1.ArtifactTrailer{Sha256: sum}}}
		},
	}, artifact, size, sent)
}
