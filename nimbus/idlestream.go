package nimbus

import (
	"context"
	"fmt"
	"time"

	"github.com/nimbusha/nimbus/configs"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// idleStream is a submission's stream whose Recv gives up when the client
// sends nothing for idle. A server stream's Recv cannot be interrupted, so
// one goroutine receives, a message at a time when Recv asks for one; after
// a timeout the handler returns, gRPC cancels the stream, and that
// goroutine's Recv fails and it exits.
type idleStream struct {
	nimbusv1.NimbusService_SubmitTopologyServer
	idle time.Duration
	ask  chan struct{}
	got  chan received
	done chan struct{} // closed by close
	err  error         // the first failure, returned by every later Recv
}

type received struct {
	msg *nimbusv1.SubmitTopologyRequest
	err error
}

// newIdleStream wraps stream; the caller must close it when the handler
// returns.
func newIdleStream(stream nimbusv1.NimbusService_SubmitTopologyServer, idle time.Duration) *idleStream {
	s := &idleStream{NimbusService_SubmitTopologyServer: stream, idle: idle,
		ask: make(chan struct{}), got: make(chan received), done: make(chan struct{})}
	go s.receive()
	return s
}

// receive runs Recv on the underlying stream for each ask, until one fails
// or the handler is done.
func (s *idleStream) receive() {
	for {
		select {
		case <-s.ask:
		case <-s.done:
			return
		}
		msg, err := s.NimbusService_SubmitTopologyServer.Recv()
		select {
		case s.got <- received{msg, err}:
		case <-s.done:
			return
		}
		if err != nil {
			return
		}
	}
}

// Recv returns the client's next message, or an error wrapping
// context.DeadlineExceeded if none arrived within idle.
func (s *idleStream) Recv() (*nimbusv1.SubmitTopologyRequest, error) {
	if s.err != nil {
		return nil, s.err
	}
	s.ask <- struct{}{} // receive waits for it: every earlier ask was answered
	timer := time.NewTimer(s.idle)
	defer timer.Stop()
	select {
	case r := <-s.got:
		s.err = r.err
		return r.msg, r.err
	case <-timer.C:
		s.err = fmt.Errorf("%w: no message from the client for %v (%s): the submission is cancelled and nothing was stored",
			context.DeadlineExceeded, s.idle, configs.KeyNimbusUploadIdleTimeout)
		return nil, s.err
	}
}

// close ends the receiving goroutine (at once, or when the stream ends).
func (s *idleStream) close() { close(s.done) }
