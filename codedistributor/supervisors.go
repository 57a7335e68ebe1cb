package codedistributor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nimbusha/nimbus/cluster"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// maxSupervisorSources bounds how many supervisors one recovery asks: the
// ones the assignment names come first and almost always hold the code.
const maxSupervisorSources = 32

// ErrHeldNowhere: no nimbus replica and no supervisor holds the code (it
// wraps ErrNotHeld). After nimbus.code.lost.grace.secs of this, the
// topology is marked LOST.
var ErrHeldNowhere = fmt.Errorf("%w by any nimbus or supervisor", ErrNotHeld)

// Source is where a fetch got its code.
type Source struct {
	Addr string // host:port of the CodeService
	// Supervisor is the supervisor's id when the code was recovered from
	// one; empty for a nimbus replica.
	Supervisor string
}

// String says where from, for logs and the cluster summary.
func (s Source) String() string {
	if s.Supervisor != "" {
		return "supervisor " + s.Supervisor + " at " + s.Addr
	}
	return "nimbus " + s.Addr
}

// SupervisorSources returns the code ports of supervisors that may hold
// the code of topologyID with digest: those its assignment places workers
// on first (when the assignment is for that digest), then any other, each
// group shuffled, at most maxSupervisorSources in all. Which of them
// really hold it, GetCodeMeta says.
// read is a Session's Read, or ReadFor on a request's behalf.
func SupervisorSources(read cluster.Reader, topologyID string, digest []byte) ([]Source, error) {
	return supervisorSources(read, topologyID, digest, maxSupervisorSources)
}

// AllSupervisorSources is SupervisorSources without a bound: every
// supervisor that serves a code port, for the last look before a
// topology is marked LOST.
func AllSupervisorSources(read cluster.Reader, topologyID string, digest []byte) ([]Source, error) {
	return supervisorSources(read, topologyID, digest, 0)
}

// supervisorSources returns at most limit sources (0: no limit).
func supervisorSources(read cluster.Reader, topologyID string, digest []byte, limit int) ([]Source, error) {
	assigned, err := assignedSupervisors(read, topologyID, digest)
	if err != nil {
		return nil, err
	}
	all, err := read.SupervisorIDs()
	if err != nil {
		return nil, err
	}
	var others []string
	for _, id := range all {
		if !assigned[id] {
			others = append(others, id)
		}
	}
	var out []Source
	for _, id := range append(shuffled(assigned), shuffledList(others)...) {
		if limit > 0 && len(out) == limit {
			break
		}
		src, ok, err := supervisorSource(read, id)
		if err != nil {
			return nil, err // not knowing whether it serves the code is no answer
		}
		if ok {
			out = append(out, src)
		}
	}
	return out, nil
}

// assignedSupervisors are the supervisors the assignment of the topology
// places executors on, if the assignment is for digest.
func assignedSupervisors(read cluster.Reader, topologyID string, digest []byte) (map[string]bool, error) {
	a, err := read.Assignment(topologyID)
	if errors.Is(err, cluster.ErrNoNode) || errors.Is(err, cluster.ErrInvalidPayload) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(a.GetCodeMetaDigest(), digest) {
		return nil, nil
	}
	ids := map[string]bool{}
	for _, e := range a.GetExecutors() {
		ids[e.GetSlot().GetSupervisorId()] = true
	}
	return ids, nil
}

// supervisorSource reads one supervisor's registration: its code port, if
// it serves one. A registration gone or unreadable is none; a read that
// failed is an error, never taken for "not a source".
func supervisorSource(read cluster.Reader, id string) (Source, bool, error) {
	info, err := read.Supervisor(id)
	if errors.Is(err, cluster.ErrNoNode) || errors.Is(err, cluster.ErrInvalidPayload) {
		return Source{}, false, nil // gone meanwhile; junk
	}
	if err != nil {
		return Source{}, false, err
	}
	if info.GetCodePort() <= 0 || info.GetHost() == "" {
		return Source{}, false, nil
	}
	addr := net.JoinHostPort(info.GetHost(), strconv.Itoa(int(info.GetCodePort())))
	return Source{Addr: addr, Supervisor: info.GetSupervisorId()}, true, nil
}

func shuffled(set map[string]bool) []string {
	list := make([]string, 0, len(set))
	for id := range set {
		list = append(list, id)
	}
	return shuffledList(list)
}

func shuffledList(list []string) []string {
	rand.Shuffle(len(list), func(i, j int) { list[i], list[j] = list[j], list[i] })
	return list
}

// Asking many nodes at once whether they hold a topology's code.
const (
	maxAskInFlight = 32              // questions out at once
	askTimeout     = 5 * time.Second // per question; a meta is small
)

// Connect gives a CodeService client for an address, and releases it.
type Connect func(addr string) (nimbusv1.CodeServiceClient, func(), error)

// AskAll asks every source, maxAskInFlight at a time and each within
// askTimeout (and ctx), whether it serves the bundle code names
// (code.Kind, code.TopologyID, code.Digest), and returns one that does. The error wraps ErrHeldNowhere when
// every source answered NotFound; otherwise it names a source that did
// not answer, or sent a meta that does not check: it may hold the code.
func AskAll(ctx context.Context, connect Connect, code Code, sources []Source) (Source, error) {
	topologyID, digest := code.TopologyID, code.Digest
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu     sync.Mutex
		holder *Source
		silent error
		g      errgroup.Group
	)
	g.SetLimit(maxAskInFlight)
	for _, src := range sources {
		if ctx.Err() != nil {
			break // one holds it, or the caller gave up
		}
		g.Go(func() error {
			held, err := serves(ctx, connect, src.Addr, code)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case held && holder == nil:
				holder = &src
				cancel() // the rest need not answer
			case err != nil && silent == nil:
				silent = fmt.Errorf("codedistributor: %s did not say whether it holds %s: %w", src, topologyID, err)
			}
			return nil
		})
	}
	_ = g.Wait() // every answer is in
	switch {
	case holder != nil:
		return *holder, nil
	case silent != nil:
		return Source{}, silent
	}
	return Source{}, fmt.Errorf("%w: %s with meta %s (asked %d)", ErrHeldNowhere, topologyID, Hex(digest), len(sources))
}

// serves asks the CodeService at addr whether it serves code's bundle.
func serves(ctx context.Context, connect Connect, addr string, code Code) (bool, error) {
	api, release, err := connect(addr)
	if err != nil {
		return false, err
	}
	defer release()
	ctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	resp, err := api.GetCodeMeta(ctx, &nimbusv1.GetCodeMetaRequest{TopologyId: code.TopologyID, Blob: code.Kind == KindBlob})
	if status.Code(err) == codes.NotFound {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if otherVersion(code.Kind, resp.GetMeta(), code.Digest) {
		return false, nil
	}
	// Ids are never reused and a topology's code never changes: a meta
	// of another digest is garbled, no answer.
	if _, err := DecodeMeta(resp.GetMeta(), code.Digest); err != nil {
		return false, err
	}
	return true, nil
}
