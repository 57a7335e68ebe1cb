package supervisor

import (
	"os/exec"
	"runtime"
)

// spawner starts processes from one goroutine locked to its OS thread.
// Linux sends the parent-death signal when the thread that forked a child
// exits, not the process; Go may retire an idle thread, so workers started
// from arbitrary goroutines could be killed at random. This thread lives
// until the supervisor closes, after its workers are stopped.
type spawner struct {
	requests chan spawnRequest
	done     chan struct{}
}

type spawnRequest struct {
	cmd *exec.Cmd
	err chan error
}

func newSpawner() *spawner {
	s := &spawner{requests: make(chan spawnRequest), done: make(chan struct{})}
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with us
		defer close(s.done)
		for req := range s.requests {
			req.err <- req.cmd.Start()
		}
	}()
	return s
}

// start starts cmd on the spawner's thread.
func (s *spawner) start(cmd *exec.Cmd) error {
	errc := make(chan error, 1)
	s.requests <- spawnRequest{cmd: cmd, err: errc}
	return <-errc
}

// close stops the spawner; call it after every worker has exited.
func (s *spawner) close() {
	close(s.requests)
	<-s.done
}
