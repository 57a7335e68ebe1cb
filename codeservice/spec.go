package codeservice

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"

	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/codedistributor"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// maxSpecBytes bounds the spec read to authorize a download: a spec comes
// in one gRPC message, far smaller than this; a meta that says otherwise
// is not believed.
const maxSpecBytes = 64 << 20

// ReadSpec returns the TopologySpec stored with a topology's code (its
// spec.pb), checked against the bundle's meta like every byte the store
// serves: its owner and conf (topology.users) are what authorizing a
// download of that code rests on. A copy that does not match is reported
// (Store.ReportCorrupt) and answered with codedistributor.ErrCorrupt; code
// not held, with codedistributor.ErrNotHeld.
func ReadSpec(store *codedistributor.Store, id string) (*nimbusv1.TopologySpec, error) {
	f, want, err := store.Open(id, codedistributor.SpecFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if want.GetSize() > maxSpecBytes {
		return nil, fmt.Errorf("%w: %s/%s: its meta says %d bytes, more than a spec can be",
			codedistributor.ErrCorrupt, id, codedistributor.SpecFile, want.GetSize())
	}
	data, err := io.ReadAll(io.LimitReader(f, want.GetSize()+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %s/%s: %v", codedistributor.ErrCorrupt, id, codedistributor.SpecFile, err)
	}
	if sum := sha256.Sum256(data); int64(len(data)) != want.GetSize() || !bytes.Equal(sum[:], want.GetSha256()) {
		store.ReportCorrupt(id)
		return nil, fmt.Errorf("%w: %s/%s on this nimbus has %d bytes with SHA-256 %s, meta says %d bytes, %s",
			codedistributor.ErrCorrupt, id, codedistributor.SpecFile, len(data), codedistributor.Hex(sum[:]),
			want.GetSize(), codedistributor.Hex(want.GetSha256()))
	}
	spec := new(nimbusv1.TopologySpec)
	if err := proto.Unmarshal(data, spec); err != nil {
		return nil, fmt.Errorf("%w: %s/%s: %v", codedistributor.ErrCorrupt, id, codedistributor.SpecFile, err)
	}
	return spec, nil
}
