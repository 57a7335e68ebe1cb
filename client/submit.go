package client

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// MaxChunkSize is the largest artifact chunk SubmitTopology sends: the
// API's limit.
const MaxChunkSize = 1 << 20

type submitStream = grpc.ClientStreamingClient[nimbusv1.SubmitTopologyRequest, nimbusv1.SubmitTopologyResponse]

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
	art := newArtifact(artifact)
	r := c.newRetrier()
	redirects := 0
	for {
		addr, err := c.leaderAddr(ctx)
		var stream submitStream
		var cancel context.CancelFunc
		if err == nil {
			stream, cancel, err = c.openSubmit(ctx, addr)
		}
		if err != nil {
			if !retryable(ctx, err) {
				if ctx.Err() != nil {
					return nil, r.ctxErr(ctx, err)
				}
				return nil, err
			}
			if addr != "" {
				c.forgetLeader(addr)
			}
			if werr := r.wait(ctx, "SubmitTopology", err); werr != nil {
				return nil, werr
			}
			continue
		}

		resp, err := upload(stream, spec, art, size, progress)
		cancel() // ends the stream if upload stopped early: no trailer, nothing stored
		if err == nil {
			return resp, nil
		}
		to, ok := notLeader(err)
		if !ok || to == "" {
			if status.Code(err) != codes.Aborted {
				return nil, err
			}
			// The leader lost leadership before it committed: the server
			// guarantees nothing remains, so submit again to the next one.
			if rerr := art.rewind(); rerr != nil {
				return nil, fmt.Errorf("client: SubmitTopology: cannot submit again after %v: %w", rerr, err)
			}
			c.forgetLeader(addr)
			if werr := r.wait(ctx, "SubmitTopology", err); werr != nil {
				return nil, werr
			}
			continue
		}
		if redirects >= c.opts.maxRedirects {
			return nil, fmt.Errorf("client: SubmitTopology: gave up after %d leader redirects: %w", redirects, err)
		}
		if verr := validateAddr(to); verr != nil {
			return nil, fmt.Errorf("client: SubmitTopology: redirect to bad leader address %q: %w", to, err)
		}
		if rerr := art.rewind(); rerr != nil {
			return nil, fmt.Errorf("client: SubmitTopology: cannot follow the redirect to %s: %v: %w", to, rerr, err)
		}
		redirects++
		c.log.Debug("following leader redirect", "rpc", "SubmitTopology", "from", addr, "to", to)
		c.learn(to)
		c.setLeader(to)
	}
}

// openSubmit opens the submission stream at addr. The stream's context is
// cancelled by the returned func.
func (c *Client) openSubmit(ctx context.Context, addr string) (submitStream, context.CancelFunc, error) {
	cn, err := c.conn(addr)
	if err != nil {
		return nil, nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	stream, err := cn.api.SubmitTopology(sctx)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	return stream, cancel, nil
}

// upload sends one whole submission on stream and returns the answer.
func upload(stream submitStream, spec *nimbusv1.TopologySpec, art *artifact, size int64, progress func(sent, total int64)) (*nimbusv1.SubmitTopologyResponse, error) {
	err := stream.Send(&nimbusv1.SubmitTopologyRequest{Part: &nimbusv1.SubmitTopologyRequest_Spec{Spec: spec}})
	if err != nil {
		return nil, sendErr(stream, err)
	}
	sum := sha256.New()
	for sent := int64(0); sent < size; {
		// A fresh buffer per chunk: gRPC may still hold a sent message.
		chunk := make([]byte, min(size-sent, MaxChunkSize))
		n, err := io.ReadFull(art, chunk)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				err = fmt.Errorf("artifact ended after %d of %d bytes", sent+int64(n), size)
			}
			return nil, fmt.Errorf("client: SubmitTopology: reading the artifact: %w", err)
		}
		sum.Write(chunk)
		err = stream.Send(&nimbusv1.SubmitTopologyRequest{Part: &nimbusv1.SubmitTopologyRequest_Chunk{Chunk: chunk}})
		if err != nil {
			return nil, sendErr(stream, err)
		}
		sent += int64(n)
		if progress != nil {
			progress(sent, size)
		}
	}
	err = stream.Send(&nimbusv1.SubmitTopologyRequest{Part: &nimbusv1.SubmitTopologyRequest_Trailer{
		Trailer: &nimbusv1.ArtifactTrailer{Sha256: sum.Sum(nil)},
	}})
	if err != nil {
		return nil, sendErr(stream, err)
	}
	return stream.CloseAndRecv()
}

// sendErr turns a failed Send into the error to report. io.EOF means the
// server ended the stream; its status, read by CloseAndRecv, says why.
func sendErr(stream submitStream, err error) error {
	if !errors.Is(err, io.EOF) {
		return err
	}
	if _, err := stream.CloseAndRecv(); err != nil {
		return err
	}
	return errors.New("client: SubmitTopology: the server ended the stream before the trailer")
}

// artifact counts what was read from the caller's reader, so a redirected
// submission knows whether it can start over.
type artifact struct {
	r      io.Reader
	seeker io.Seeker // nil when r cannot seek
	start  int64     // r's offset when the submission began
	read   int64
}

func newArtifact(r io.Reader) *artifact {
	a := &artifact{r: r}
	if s, ok := r.(io.Seeker); ok {
		if off, err := s.Seek(0, io.SeekCurrent); err == nil {
			a.seeker, a.start = s, off
		}
	}
	return a
}

func (a *artifact) Read(p []byte) (int, error) {
	n, err := a.r.Read(p)
	a.read += int64(n)
	return n, err
}

// rewind makes the artifact readable from its start again.
func (a *artifact) rewind() error {
	if a.read == 0 {
		return nil
	}
	if a.seeker == nil {
		return errors.New("the artifact is not an io.Seeker and was partly sent")
	}
	if _, err := a.seeker.Seek(a.start, io.SeekStart); err != nil {
		return fmt.Errorf("rewinding the artifact: %w", err)
	}
	a.read = 0
	return nil
}
