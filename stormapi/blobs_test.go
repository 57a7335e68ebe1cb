package stormapi

import (
	"crypto/tls"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// testBlobs are three blobs: one anyone reads, one alice's, one bob
// reads; the first is used by a topology.
func testBlobs() []*nimbusv1.BlobInfo {
	return []*nimbusv1.BlobInfo{
		{Key: "dict en.txt", Version: 3, ContentSha256: []byte{0xab, 0x01, 0xff}, Size: 1 << 20, Owner: "alice",
			Acl: []string{"u:alice:rwa", "o::r--"}, ReplicationFactor: 3, ReplicationCount: 2, State: "UNDER_REPLICATED",
			CreatedUnixMs: 1_700_000_000_000, UpdatedUnixMs: 1_700_000_500_000, UsedBy: []string{"wc-1"}},
		{Key: "alice.key", Version: 1, Size: 10, Owner: "alice", Acl: []string{"u:alice:rwa"}, ReplicationFactor: 3,
			ReplicationCount: 3, State: "OK"},
		{Key: "model", Version: 1, Size: 10, Owner: "alice", Acl: []string{"u:alice:rwa", "u:bob:r--"}, ReplicationFactor: 1,
			State: "LOST"},
	}
}

// GET /blobstore lists every blob in the API's camelCase: the digest in
// hex, the ACL as Storm's entries, the replication and its state, and
// usedBy from the leader only (null elsewhere, where it is not known);
// GET /blobstore/:key is one blob of that shape, its key unescaped from
// the path.
func TestBlobstoreShapes(t *testing.T) {
	api := newTestAPI(t, &fakeReads{blobs: testBlobs()})
	code, out := get(t, api, "/api/v1/blobstore")
	blobs, _ := out["blobs"].([]any)
	if code != http.StatusOK || len(blobs) != 3 {
		t.Fatalf("code %d, answer %v", code, out)
	}
	if _, ok := out["leaderlessSeconds"]; !ok {
		t.Errorf("no leaderlessSeconds in %v", out)
	}
	want := map[string]any{
		"key": "dict en.txt", "encodedKey": "dict%20en.txt", "version": 3.0, "contentSha256": "ab01ff", "size": float64(1 << 20),
		"owner": "alice", "acl": []any{"u:alice:rwa", "o::r--"}, "replicationFactor": 3.0, "replicationCount": 2.0,
		"state": "UNDER_REPLICATED", "createdUnixMs": 1.7e12, "updatedUnixMs": 1_700_000_500_000.0, "usedBy": nil,
	}
	wantFields(t, "on a follower", blobs[0].(map[string]any), want)

	api.cfg.State = func() State { return State{Leads: true} }
	_, out = get(t, api, "/api/v1/blobstore")
	blobs, _ = out["blobs"].([]any)
	wantFields(t, "on the leader", blobs[0].(map[string]any), map[string]any{"usedBy": []any{"wc-1"}})
	wantFields(t, "on the leader, unused", blobs[1].(map[string]any), map[string]any{"usedBy": []any{}})

	code, out = get(t, api, "/api/v1/blobstore/dict%20en.txt")
	if code != http.StatusOK {
		t.Fatalf("GET one blob: %d %v", code, out)
	}
	want["usedBy"] = []any{"wc-1"}
	wantFields(t, "one blob", out, want)
}

// A key no blob has is a 404 naming it; a key Storm's rule refuses is a
// 400 naming the field, and is not looked up.
func TestBlobstoreKeyErrors(t *testing.T) {
	reads := &fakeReads{blobs: testBlobs()}
	api := newTestAPI(t, reads)
	code, out := get(t, api, "/api/v1/blobstore/nope")
	if msg, _ := out["errorMessage"].(string); code != http.StatusNotFound || out["error"] != "404 Not Found" || !strings.Contains(msg, `"nope"`) {
		t.Errorf("unknown key: %d %v, want 404 naming it", code, out)
	}
	for _, key := range []string{"a$b", "meta.pb", strings.Repeat("k", 201), "tab%09key"} {
		code, out := get(t, api, "/api/v1/blobstore/"+key)
		if msg, _ := out["errorMessage"].(string); code != http.StatusBadRequest || !strings.HasPrefix(msg, "key") {
			t.Errorf("key %q: %d %v, want 400 naming key", key, code, out)
		}
	}
	reads.blobs = nil
	if code, out := get(t, api, "/api/v1/blobstore"); code != http.StatusOK || out["blobs"] == nil || len(out["blobs"].([]any)) != 0 {
		t.Errorf("no blobs: %d %v, want an empty list", code, out)
	}
}

// With authentication on, the list is what the caller's certificate
// principal may read by the blobs' ACLs; a blob it may not read answers
// in the words of one that does not exist; no certificate is a 401.
func TestBlobstoreListsWhatTheCallerMayRead(t *testing.T) {
	reads := &fakeReads{blobs: testBlobs()}
	s := startSecureAPI(t, func(c *Config) {
		reads.cluster = &nimbusv1.GetClusterInfoResponse{Cluster: &nimbusv1.ClusterSummary{}}
		reads.authz, c.Reads = c.Authz, reads
	})
	for who, want := range map[string][]string{
		"alice": {"dict en.txt", "alice.key", "model"},
		"bob":   {"dict en.txt", "model"},
		"carol": {"dict en.txt"},
	} {
		code, out := s.getAs(t, who, "/api/v1/blobstore")
		var keys []string
		blobs, _ := out["blobs"].([]any)
		for _, b := range blobs {
			keys = append(keys, b.(map[string]any)["key"].(string))
		}
		if code != http.StatusOK || !slices.Equal(keys, want) {
			t.Errorf("%s lists %d %v, want %v", who, code, keys, want)
		}
	}
	if code, out := s.getAs(t, "bob", "/api/v1/blobstore/model"); code != http.StatusOK || out["key"] != "model" {
		t.Errorf("bob reads model: %d %v", code, out)
	}
	code, out := s.getAs(t, "bob", "/api/v1/blobstore/alice.key")
	hidden, _ := out["errorMessage"].(string)
	if code != http.StatusNotFound || !strings.Contains(hidden, `"alice.key"`) {
		t.Errorf("bob reads alice.key: %d %v, want 404", code, out)
	}
	_, out = s.getAs(t, "bob", "/api/v1/blobstore/other.key")
	if absent, _ := out["errorMessage"].(string); strings.ReplaceAll(absent, "other.key", "alice.key") != hidden {
		t.Errorf("a blob bob may not read says %q, one that does not exist %q: they differ", hidden, absent)
	}
	if code, _ := s.getAs(t, "", "/api/v1/blobstore"); code != http.StatusUnauthorized {
		t.Errorf("no certificate: %d, want 401", code)
	}
}

// getAs sends GET path as who ("" for no certificate) and decodes the
// answer.
func (s *secureAPI) getAs(t *testing.T, who, path string) (int, map[string]any) {
	t.Helper()
	var certs []tls.Certificate
	if who != "" {
		certs = append(certs, s.ca.Client(t, who))
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: s.ca.ClientConfig(certs...)}}
	defer c.CloseIdleConnections()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, s.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s as %q: %v", path, who, err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("GET %s as %q: %v", path, who, err)
	}
	return resp.StatusCode, out
}

// wantFields fails unless got has want's fields, compared as JSON.
func wantFields(t *testing.T, what string, got, want map[string]any) {
	t.Helper()
	for k, v := range want {
		g, _ := json.Marshal(got[k])
		w, _ := json.Marshal(v)
		if _, ok := got[k]; !ok || string(g) != string(w) {
			t.Errorf("%s: %s = %s, want %s", what, k, g, w)
		}
	}
}
