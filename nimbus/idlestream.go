package nimbus

import (
	"context"
	"fmt"
	"time"

	"github.com/nimbusha/nimbus/configs"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// idleStream is a submission's stream whose Recv gives up when the client
// sends nothing for idle (idleReceiver).
type idleStream struct {
	nimbusv1.NimbusService_SubmitTopologyServer
	*idleReceiver[*nimbusv1.SubmitTopologyRequest]
}

// newIdleStream wraps stream; the caller must close it when the handler
// returns.
func newIdleStream(stream nimbusv1.NimbusService_SubmitTopologyServer, idle time.Duration) *idleStream {
	return &idleStream{stream, newIdleReceiver(stream.Recv, idle)}
}

// Recv is the idleReceiver's.
func (s *idleStream) Recv() (*nimbusv1.SubmitTopologyRequest, error) { return s.idleReceiver.Recv() }

// idleReceiver is an upload stream's Recv that gives up when the client
// sends nothing for idle. A server stream's Recv cannot be interrupted, so
// one goroutine receives, a message at a time when Recv asks for one; after
// a timeout the handler returns, gRPC cancels the stream, and that
// goroutine's Recv fails and it exits.
type idleReceiver[M any] struct {
	recv func() (M, error)
	idle time.Duration
	ask  chan struct{}
	got  chan received[M]
	done chan struct{} // closed by close
	err  error         // the first failure, returned by every later Recv
}

type received[M any] struct {
	msg M
	err error
}

// newIdleReceiver receives with recv; the caller must close it when the
// handler returns.
func newIdleReceiver[M any](recv func() (M, error), idle time.Duration) *idleReceiver[M] {
	s := &idleReceiver[M]{recv: recv, idle: idle,
		ask: make(chan struct{}), got: make(chan received[M]), done: make(chan struct{})}
	go s.receive()
	return s
}

// receive runs Recv on the underlying stream for each ask, until one fails
// or the handler is done.
func (s *idleReceiver[M]) receive() {
	for {
		select {
		case <-s.ask:
		case <-s.done:
			return
		}
		msg, err := s.recv()
		select {
		case s.got <- received[M]{msg, err}:
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
func (s *idleReceiver[M]) Recv() (M, error) {
	var none M
	if s.err != nil {
		return none, s.err
	}
	s.ask <- struct{}{} // receive waits for it: every earlier ask was answered
	timer := time.NewTimer(s.idle)
	defer timer.Stop()
	select {
	case r := <-s.got:
		s.err = r.err
		return r.msg, r.err
	case <-timer.C:
		s.err = fmt.Errorf("%w: no message from the client for %v (%s): the upload is cancelled and nothing was stored",
			context.DeadlineExceeded, s.idle, configs.KeyNimbusUploadIdleTimeout)
		return none, s.err
	}
}

// close ends the receiving goroutine (at once, or when the stream ends).
func (s *idleReceiver[M]) close() { close(s.done) }
