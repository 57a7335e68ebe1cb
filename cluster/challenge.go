package cluster

import (
	"context"
	"errors"
	"strings"

	"github.com/go-zookeeper/zk"
)

// A challenge asks a leader whose port refuses connections whether it is
// alive, through ZooKeeper, where a network fault between two nimbuses
// cannot answer for it (package depose). The challenger creates an
// ephemeral node under /challenges named after the leader's lock node; a
// leader answers by deleting the challenges made to it, which it can only
// do while its process runs and holds a session.

// Challenge creates a challenge to the leader holding lock node lockName,
// and returns its path.
func (s *Session) Challenge(lockName string) (string, error) {
	return s.Conn().Create(s.paths.Challenges()+"/"+lockName+"-", nil, zk.FlagEphemeral|zk.FlagSequence, s.access.acl)
}

// AwaitAnswer waits until the challenge at path is answered (deleted), and
// reports whether it was before ctx ended. Either way the challenge is
// withdrawn.
func (s *Session) AwaitAnswer(ctx context.Context, path string) (bool, error) {
	defer func() { _ = s.Conn().Delete(path, AnyVersion) }()
	for {
		ok, _, watch, err := s.Conn().ExistsW(path)
		if err != nil {
			return false, err
		}
		if !ok {
			return true, nil
		}
		select {
		case <-watch:
		case <-ctx.Done():
			return false, nil
		}
	}
}

// AnswerChallenges answers the challenges made to the leader holding lock
// node lockName, and returns a Watch that fires when new ones come.
func (s *Session) AnswerChallenges(lockName string) (Watch, error) {
	dir := s.paths.Challenges()
	names, _, watch, err := s.Conn().ChildrenW(dir)
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		if strings.HasPrefix(name, lockName+"-") {
			if err := s.Conn().Delete(dir+"/"+name, AnyVersion); err != nil && !errors.Is(err, zk.ErrNoNode) {
				return watch, err
			}
		}
	}
	return watch, nil
}
