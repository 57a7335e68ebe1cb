package cluster

import (
	"fmt"

	"google.golang.org/protobuf/proto"
)

// Decode parses a node's payload into m, naming the node on failure so a
// corrupt znode is reported, never fatal.
func Decode(nodePath string, data []byte, m proto.Message) error {
	if err := proto.Unmarshal(data, m); err != nil {
		return fmt.Errorf("cluster: decode %s: %w", nodePath, err)
	}
	return nil
}

// Encode serializes a payload deterministically.
func Encode(m proto.Message) []byte {
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		// Our own messages always marshal; a failure is a programming error.
		panic(fmt.Sprintf("cluster: encode %T: %v", m, err))
	}
	return data
}
