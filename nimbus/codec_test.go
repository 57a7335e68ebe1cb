package nimbus

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"

	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// A shared answer is sent as encoded when shared; once replaced, it is
// encoded afresh; anything else is plain proto.
func TestSharedEncodings(t *testing.T) {
	c := newSharedEncodings()
	marshal := func(m proto.Message) []byte {
		t.Helper()
		data, err := c.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return data.Materialize()
	}
	want := func(m proto.Message) []byte {
		data, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}

	first := &nimbusv1.GetLeaderResponse{Leader: &nimbusv1.NimbusSummary{Host: "a", Port: 1}}
	c.share(first, nil)
	sent := want(first)
	// Changed behind the codec's back (never done outside this test): the
	// shared encoding is what goes out, so it was not encoded again.
	first.Leader.Port = 2
	if got := marshal(first); !bytes.Equal(got, sent) {
		t.Fatalf("shared answer encoded again: %x, want %x", got, sent)
	}

	second := &nimbusv1.GetLeaderResponse{Leader: &nimbusv1.NimbusSummary{Host: "b", Port: 3}}
	c.share(second, first)
	if got := marshal(first); !bytes.Equal(got, want(first)) {
		t.Fatalf("replaced answer: %x, want its own encoding %x", got, want(first))
	}
	if got := marshal(second); !bytes.Equal(got, want(second)) {
		t.Fatalf("new shared answer: %x, want %x", got, want(second))
	}
	if len(c.encoded) != 1 {
		t.Fatalf("%d encodings kept, want 1", len(c.encoded))
	}

	other := &nimbusv1.GetClusterInfoRequest{}
	if got := marshal(other); !bytes.Equal(got, want(other)) {
		t.Fatalf("plain message: %x, want %x", got, want(other))
	}
	var into nimbusv1.GetLeaderResponse
	data, _ := c.Marshal(second)
	if err := c.Unmarshal(data, &into); err != nil || !proto.Equal(&into, second) {
		t.Fatalf("round trip: %v, %v", &into, err)
	}
}

// A build that failed shares none (share(nil, old)): the codec forgets the
// old answer, so leaderless spells leak nothing.
func TestSharedEncodingsForgetOnAFailedBuild(t *testing.T) {
	c := newSharedEncodings()
	for range 5 {
		answer := &nimbusv1.GetLeaderResponse{Leader: &nimbusv1.NimbusSummary{Host: "a", Port: 1}}
		c.share(answer, nil)
		c.share(nil, answer)
	}
	if len(c.encoded) != 0 {
		t.Fatalf("%d encodings kept after the last build failed, want 0", len(c.encoded))
	}
}
