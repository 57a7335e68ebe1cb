package stormapi

import (
	"encoding/json"
	"sync"

	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// snapshot is one cluster summary the nimbus's view built, with the JSON
// of each summary endpoint encoded from it at most once: the view shares
// one summary among all requests until the caches change (or the second
// turns, for uptimes), and so does the API.
type snapshot struct {
	info *nimbusv1.GetClusterInfoResponse // shared: never modified
	byID map[string]*nimbusv1.TopologySummary

	mu     sync.Mutex
	bodies map[string]*sharedBody
}

// snapshot returns the snapshot of the view's current summary.
func (a *API) snapshot(r *request) (*snapshot, error) {
	info, err := a.cfg.Reads.GetClusterInfo(r.ctx, &nimbusv1.GetClusterInfoRequest{})
	if err != nil {
		return nil, err
	}
	if s := a.snap.Load(); s != nil && s.info == info {
		return s, nil
	}
	s := &snapshot{info: info, byID: map[string]*nimbusv1.TopologySummary{}, bodies: map[string]*sharedBody{}}
	for _, t := range info.GetCluster().GetTopologies() {
		s.byID[t.GetId()] = t
	}
	a.snap.Store(s)
	return s, nil
}

// body is the JSON of v, which build makes, encoded once per snapshot
// under key. r remembers it as shared, so that write may send its gzip
// form (gzip.go).
func (s *snapshot) body(r *request, key string, build func() any) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.bodies[key]
	if !ok {
		j, err := json.Marshal(build())
		if err != nil {
			return nil, err
		}
		b = &sharedBody{json: j}
		s.bodies[key] = b
	}
	r.shared = b
	return b.json, nil
}
