package stormapi

import (
	"encoding/json"
	"net"
	"strconv"
)

// jsonObject is {key: value}.
func jsonObject(key string, value any) ([]byte, error) {
	return json.Marshal(map[string]any{key: value})
}

// nonNil is s, or an empty slice for nil: Storm's lists are [], never
// null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// addrOf is host:port.
func addrOf(host string, port int32) string { return net.JoinHostPort(host, strconv.Itoa(int(port))) }
