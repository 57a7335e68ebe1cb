package view

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/apierr"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// A build that fails (no leader, say) replaces the shared answer with
// none: share is told to forget the old one, so leaderless spells leak
// nothing in the server's codec.
func TestViewForgetsTheSharedAnswerOnAFailedBuild(t *testing.T) {
	shared := map[proto.Message]bool{} // what the codec would keep encoded
	v := &View{share: func(m, old proto.Message) {
		delete(shared, old)
		if m != nil {
			shared[m] = true
		}
	}}
	var b built[*nimbusv1.GetLeaderResponse]
	fail := false
	build := func() (*nimbusv1.GetLeaderResponse, error) {
		if fail {
			return nil, apierr.ErrNoLeader
		}
		return &nimbusv1.GetLeaderResponse{Leader: &nimbusv1.NimbusSummary{Host: "a", Port: 1}}, nil
	}
	for i := range 5 {
		fail = false
		if _, err := cached(v, &b, viewKey{second: int64(2 * i)}, build); err != nil {
			t.Fatal(err)
		}
		fail = true
		if _, err := cached(v, &b, viewKey{second: int64(2*i + 1)}, build); err == nil {
			t.Fatal("failed build answered")
		}
	}
	if len(shared) != 0 {
		t.Fatalf("%d answers still shared after the last build failed, want 0", len(shared))
	}
}
