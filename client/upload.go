package client

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// upload is one kind of upload to the leader: a client stream that
// carries a header message, then content in chunks of at most
// MaxChunkSize, then a trailer with the content's SHA-256. Submissions
// and blob creates and updates are uploads; uploadToLeader sends any of
// them with the same leader-following and retry rules.
type upload[Req, Resp any] struct {
	rpc     string                                                                                                                              // the method's name, for errors and logs
	what    string                                                                                                                              // what the content is, for errors: "artifact", "content"
	open    func(api nimbusv1.NimbusServiceClient, ctx context.Context, opts ...grpc.CallOption) (grpc.ClientStreamingClient[Req, Resp], error) // a method expression
	header  func() *Req
	chunk   func([]byte) *Req
	trailer func(sha256 []byte) *Req
}

// uploadToLeader sends u's upload of content to the leader and returns its
// answer. size is the content's length, read exactly (content that ends
// sooner fails the upload, which the server then never stores), or -1 to
// read content to its end. progress, if not nil, is called after each
// chunk with the bytes sent so far.
//
// An upload is not idempotent, so it is retried only where no nimbus can
// have stored it (see SubmitTopology, whose rules these are): finding the
// leader and opening the stream are retried on Unavailable within the
// retry budget; NOT_LEADER is followed at any point, and ABORTED (the
// leader lost leadership before it committed) is sent again to the next
// leader, both only if content can start over (an io.Seeker is rewound;
// another reader only if nothing of it was read yet). Nothing else is
// retried. The stream is not bounded by WithCallTimeout: ctx bounds it.
func uploadToLeader[Req, Resp any](ctx context.Context, c *Client, u upload[Req, Resp], content io.Reader, size int64, progress func(sent int64)) (*Resp, error) {
	art := newArtifact(content)
	r := c.newRetrier()
	redirects := 0
	for {
		addr, err := c.leaderAddr(ctx)
		var stream grpc.ClientStreamingClient[Req, Resp]
		var cancel context.CancelFunc
		if err == nil {
			stream, cancel, err = openUpload(ctx, c, addr, u)
		}
		if err != nil {
			if rerr := r.retryAfter(ctx, u.rpc, addr, err); rerr != nil {
				return nil, rerr
			}
			continue
		}

		resp, err := send(stream, u, art, size, progress)
		cancel() // ends the stream if send stopped early: no trailer, nothing stored
		if err == nil {
			return resp, nil
		}
		to, ok := notLeader(err)
		if !ok || to == "" {
			if status.Code(err) != codes.Aborted {
				return nil, err
			}
			// The leader lost leadership before it committed: the server
			// guarantees nothing remains, so send again to the next one.
			if rerr := art.rewind(); rerr != nil {
				return nil, fmt.Errorf("client: %s: cannot send again after %v: %w", u.rpc, rerr, err)
			}
			c.forgetLeader(addr)
			if werr := r.wait(ctx, u.rpc, err); werr != nil {
				return nil, werr
			}
			continue
		}
		if rerr := art.rewind(); rerr != nil {
			return nil, fmt.Errorf("client: %s: cannot follow the redirect to %s: %v: %w", u.rpc, to, rerr, err)
		}
		if rerr := c.redirect(u.rpc, addr, to, &redirects, err); rerr != nil {
			return nil, rerr
		}
	}
}

// openUpload opens u's stream at addr. The stream's context is cancelled
// by the returned func.
func openUpload[Req, Resp any](ctx context.Context, c *Client, addr string, u upload[Req, Resp]) (grpc.ClientStreamingClient[Req, Resp], context.CancelFunc, error) {
	cn, err := c.conn(addr)
	if err != nil {
		return nil, nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	stream, err := u.open(cn.api, sctx)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	return stream, cancel, nil
}

// send sends one whole upload on stream (header, chunks hashed as they
// go, trailer) and returns the answer.
func send[Req, Resp any](stream grpc.ClientStreamingClient[Req, Resp], u upload[Req, Resp], art *artifact, size int64, progress func(sent int64)) (*Resp, error) {
	if err := stream.Send(u.header()); err != nil {
		return nil, sendErr(stream, u.rpc, err)
	}
	sum := sha256.New()
	for sent := int64(0); size < 0 || sent < size; {
		// A fresh buffer per chunk: gRPC may still hold a sent message.
		want := int64(MaxChunkSize)
		if size >= 0 {
			want = min(size-sent, MaxChunkSize)
		}
		chunk := make([]byte, want)
		n, err := io.ReadFull(art, chunk)
		ended := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
		switch {
		case err != nil && ended && size >= 0:
			err = fmt.Errorf("%s ended after %d of %d bytes", u.what, sent+int64(n), size)
			return nil, fmt.Errorf("client: %s: reading the %s: %w", u.rpc, u.what, err)
		case err != nil && !ended:
			return nil, fmt.Errorf("client: %s: reading the %s: %w", u.rpc, u.what, err)
		}
		if n > 0 {
			sum.Write(chunk[:n])
			if err := stream.Send(u.chunk(chunk[:n])); err != nil {
				return nil, sendErr(stream, u.rpc, err)
			}
			sent += int64(n)
			if progress != nil {
				progress(sent)
			}
		}
		if ended {
			break // size unknown: the content's end
		}
	}
	if err := stream.Send(u.trailer(sum.Sum(nil))); err != nil {
		return nil, sendErr(stream, u.rpc, err)
	}
	return stream.CloseAndRecv()
}

// sendErr turns a failed Send into the error to report. io.EOF means the
// server ended the stream; its status, read by CloseAndRecv, says why.
func sendErr[Req, Resp any](stream grpc.ClientStreamingClient[Req, Resp], rpc string, err error) error {
	if !errors.Is(err, io.EOF) {
		return err
	}
	if _, err := stream.CloseAndRecv(); err != nil {
		return err
	}
	return fmt.Errorf("client: %s: the server ended the stream before the trailer", rpc)
}

// artifact counts what was read from the caller's reader, so a redirected
// upload knows whether it can start over.
type artifact struct {
	r      io.Reader
	seeker io.Seeker // nil when r cannot seek
	start  int64     // r's offset when the upload began
	read   int64
}

func newArtifact(r io.Reader) *artifact {
	if r == nil {
		r = eofReader{}
	}
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
		return errors.New("the content is not an io.Seeker and was partly sent")
	}
	if _, err := a.seeker.Seek(a.start, io.SeekStart); err != nil {
		return fmt.Errorf("rewinding the content: %w", err)
	}
	a.read = 0
	return nil
}

// eofReader is the content of an upload given no reader: none.
type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }
