package nimbus

import (
	"sync"

	"google.golang.org/grpc/encoding"
	protoenc "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// sharedEncodings is the gRPC server's codec: proto, except that an answer
// the view shares between requests (built once per change of the caches)
// is encoded once, when built, instead of once per request. With a
// thousand topologies and supervisors, encoding GetClusterInfo's answer
// costs more than the rest of the call.
type sharedEncodings struct {
	proto encoding.CodecV2

	mu      sync.RWMutex
	encoded map[proto.Message][]byte // by the shared message
}

func newSharedEncodings() *sharedEncodings {
	return &sharedEncodings{proto: encoding.GetCodecV2(protoenc.Name), encoded: map[proto.Message][]byte{}}
}

// share encodes m, which must never change from now on, for every request
// answered with it; old, the answer it replaces, is forgotten (requests
// still holding it encode it themselves). Either may be nil.
func (c *sharedEncodings) share(m, old proto.Message) {
	var data []byte
	var err error
	if m != nil {
		data, err = proto.Marshal(m)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old != nil {
		delete(c.encoded, old)
	}
	if m != nil && err == nil {
		c.encoded[m] = data
	}
}

func (c *sharedEncodings) Marshal(v any) (mem.BufferSlice, error) {
	if m, ok := v.(proto.Message); ok {
		c.mu.RLock()
		data, shared := c.encoded[m]
		c.mu.RUnlock()
		if shared {
			return mem.BufferSlice{mem.SliceBuffer(data)}, nil // never freed to a pool: safe to send again
		}
	}
	return c.proto.Marshal(v)
}

func (c *sharedEncodings) Unmarshal(data mem.BufferSlice, v any) error {
	return c.proto.Unmarshal(data, v)
}

func (c *sharedEncodings) Name() string { return c.proto.Name() }
