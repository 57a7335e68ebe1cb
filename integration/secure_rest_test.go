package integration

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nimbusha/nimbus/client"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// restAPI: with security on, the REST API is HTTPS with the gRPC port's
// certificates and rules. No certificate: 401. Any authenticated caller
// reads the cluster, only admins the configuration. An action sent to a
// follower is decided at the leader as the caller, not as the forwarding
// nimbus: a stranger is refused and nothing changes; the owner's goes
// through, audited as the owner via the follower.
func (s *secureCluster) restAPI(t *testing.T) {
	alice, trudy := s.sec.Client(t, "alice"), s.sec.Client(t, "trudy")
	spec := sleepSpec("alicerest", 1)
	resp, err := sdkClient(t, alice, s.nimbuses...).SubmitTopology(t.Context(), spec, strings.NewReader("code"), 4, nil)
	if err != nil {
		t.Fatalf("alice submits: %v", err)
	}
	id := resp.GetTopologyId()
	base := s.follower.UIURL()
	if !strings.HasPrefix(base, "https://") {
		t.Fatalf("the REST API of %s is %s, want HTTPS", s.follower.Name, base)
	}
	var from string // the client's address in the last call, as the nimbus sees it
	call := func(id testcluster.Identity, method, path string, header ...string) (int, map[string]any) {
		t.Helper()
		ctx := httptrace.WithClientTrace(t.Context(), &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
			from = info.Conn.LocalAddr().String()
		}})
		req, err := http.NewRequestWithContext(ctx, method, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		r, err := s.c.UIClientAs(t, id).Do(req)
		if err != nil {
			t.Fatalf("%s %s as %q: %v", method, path, id.Principal, err)
		}
		defer r.Body.Close()
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Fatalf("%s %s as %q: %d, not JSON: %s", method, path, id.Principal, r.StatusCode, raw)
		}
		return r.StatusCode, body
	}
	if code, body := call(s.sec.Anonymous(), http.MethodGet, "/api/v1/cluster/summary"); code != http.StatusUnauthorized || body["errorMessage"] == nil {
		t.Errorf("no certificate: %d %v, want 401 with a JSON error", code, body)
	}
	if code, body := call(trudy, http.MethodGet, "/api/v1/cluster/summary"); code != http.StatusOK || body["user"] != "trudy" {
		t.Errorf("trudy reads the cluster: %d %v, want 200 naming her as user", code, body)
	}
	if code, _ := call(trudy, http.MethodGet, "/api/v1/cluster/configuration"); code != http.StatusForbidden {
		t.Errorf("trudy reads the configuration: %d, want 403 (admins only)", code)
	}
	if code, _ := call(s.sec.Admin, http.MethodGet, "/api/v1/cluster/configuration"); code != http.StatusOK {
		t.Errorf("the admin reads the configuration: %d, want 200", code)
	}
	if _, body := call(trudy, http.MethodGet, "/api/v1/cluster/summary"); body["userMayHandOver"] != false {
		t.Errorf("trudy's cluster summary says userMayHandOver %v, want false", body["userMayHandOver"])
	}
	if _, body := call(s.sec.Admin, http.MethodGet, "/api/v1/cluster/summary"); body["userMayHandOver"] != true {
		t.Errorf("the admin's cluster summary says userMayHandOver %v, want true", body["userMayHandOver"])
	}
	if code, body := call(trudy, http.MethodPost, "/api/v1/nimbus/handover?to="+s.follower.Addr()); code != http.StatusForbidden ||
		!strings.Contains(fmt.Sprint(body["errorMessage"]), "trudy may not hand leadership over") {
		t.Errorf("trudy hands leadership over through the follower: %d %v, want 403 naming trudy", code, body)
	}
	if code, body := call(trudy, http.MethodPost, "/api/v1/topology/"+id+"/profiling/restartworker/host-1:6700"); code != http.StatusForbidden ||
		!strings.Contains(fmt.Sprint(body["errorMessage"]), "trudy may not restart a worker of") {
		t.Errorf("trudy restarts a worker of alice's topology through the follower: %d %v, want 403 naming trudy", code, body)
	}
	if code, body := call(alice, http.MethodPost, "/api/v1/topology/"+id+"/profiling/restartworker/nowhere.invalid:6700"); code != http.StatusNotFound ||
		!strings.Contains(fmt.Sprint(body["errorMessage"]), "no worker at nowhere.invalid:6700") {
		t.Errorf("alice restarts a worker her topology does not have: %d %v, want 404 naming it", code, body)
	}
	if code, body := call(trudy, http.MethodPost, "/api/v1/topology/"+id+"/deactivate"); code != http.StatusForbidden ||
		!strings.Contains(body["errorMessage"].(string), "trudy may not deactivate") {
		t.Errorf("trudy deactivates alice's topology through the follower: %d %v, want 403 naming trudy", code, body)
	}
	// Refused by the leader: audited there as trudy, via the follower,
	// from her address; and on the follower, which answered her.
	waitAudit(t, s.leader, "trudy's deactivate refused by the leader", map[string]any{"principal": "trudy", "action": "deactivate",
		"via": testcluster.NimbusPrincipal, "client": from, "outcome": "PermissionDenied"})
	waitAudit(t, s.follower, "trudy's deactivate on the follower", map[string]any{"principal": "trudy", "action": "deactivate",
		"target": id, "remote": from, "outcome": "PermissionDenied", "code": 403})
	// Refused by the follower itself (a cross-origin POST): audited there.
	if code, _ := call(trudy, http.MethodPost, "/api/v1/topology/"+id+"/kill/0", "Sec-Fetch-Site", "cross-site"); code != http.StatusForbidden {
		t.Errorf("trudy's cross-origin kill through the follower: %d, want 403", code)
	}
	waitAudit(t, s.follower, "trudy's cross-origin kill on the follower", map[string]any{"principal": "trudy", "action": "kill",
		"target": id, "remote": from, "outcome": "PermissionDenied", "code": 403})
	if b, _ := stormBase(t, s.zk, id); b.GetStatus() != clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE {
		t.Fatalf("after trudy's refused deactivate the topology is %v", b.GetStatus())
	}
	if code, body := call(alice, http.MethodPost, "/api/v1/topology/"+id+"/deactivate"); code != http.StatusOK || body["status"] != "success" {
		t.Fatalf("alice deactivates her topology through the follower: %d %v", code, body)
	}
	alicesAddr := from
	if b, _ := stormBase(t, s.zk, id); b.GetStatus() != clusterv1.TopologyStatus_TOPOLOGY_STATUS_INACTIVE {
		t.Errorf("after alice's deactivate the topology is %v", b.GetStatus())
	}
	// The leader audits before it answers; the line reaches its log file
	// through the harness a moment later.
	testcluster.WaitFor(t, 5*time.Second, "the leader's audit line of alice's deactivate via the follower", func() error {
		for line := range strings.Lines(logText(t, s.leader)) {
			if strings.Contains(line, `"msg":"audit"`) && strings.Contains(line, `"principal":"alice"`) &&
				strings.Contains(line, `"action":"deactivate"`) && strings.Contains(line, `"via":"`+testcluster.NimbusPrincipal+`"`) &&
				strings.Contains(line, `"client":"`+alicesAddr+`"`) && strings.Contains(line, `"outcome":"ok"`) {
				return nil
			}
		}
		return fmt.Errorf("audit lines: %v", audits(t, s.leader))
	})
	waitAudit(t, s.follower, "alice's deactivate on the follower", map[string]any{"principal": "alice", "action": "deactivate",
		"target": id, "remote": alicesAddr, "outcome": "ok", "code": 200})
	s.restBlobs(t, call)
	zero := int32(0)
	if err := sdkClient(t, alice, s.nimbuses...).KillTopology(t.Context(), &nimbusv1.KillTopologyRequest{Name: "alicerest", WaitSecs: &zero}); err != nil {
		t.Errorf("alice kills alicerest: %v", err)
	}
}

// restBlobs: GET blobstore lists, on a follower, the blobs the
// caller's certificate lets it read: alice's blob that bob may read is
// listed to both, not to trudy, who gets the 404 of a key no blob has.
func (s *secureCluster) restBlobs(t *testing.T, call func(testcluster.Identity, string, string, ...string) (int, map[string]any)) {
	alice := sdkClient(t, s.sec.Client(t, "alice"), s.nimbuses...)
	two := int32(2)
	if _, err := alice.CreateBlob(t.Context(), "alicerest-notes", strings.NewReader("notes"),
		client.BlobOptions{ReplicationFactor: &two, ACL: []string{"u:bob:r--"}}); err != nil {
		t.Fatalf("alice creates a blob: %v", err)
	}
	// Gone from every nimbus's cache before the next subtest counts blobs.
	defer func() {
		if err := alice.DeleteBlob(t.Context(), "alicerest-notes"); err != nil {
			t.Errorf("alice deletes her blob: %v", err)
			return
		}
		for _, p := range s.nimbuses {
			one := sdkClient(t, s.sec.Client(t, "alice"), p)
			testcluster.WaitFor(t, 10*time.Second, "alicerest-notes gone from "+p.Name, func() error {
				list, err := one.ListBlobs(t.Context())
				for _, b := range list.GetBlobs() {
					if b.GetKey() == "alicerest-notes" {
						return fmt.Errorf("%s still lists it", p.Name)
					}
				}
				return err
			})
		}
	}()
	listed := func(id testcluster.Identity) []string {
		t.Helper()
		code, body := call(id, http.MethodGet, "/api/v1/blobstore")
		blobs, ok := body["blobs"].([]any)
		if code != http.StatusOK || !ok {
			t.Fatalf("GET blobstore as %s: %d %v", id.Principal, code, body)
		}
		var keys []string
		for _, b := range blobs {
			keys = append(keys, fmt.Sprint(b.(map[string]any)["key"]))
		}
		return keys
	}
	for _, who := range []string{"alice", "bob"} {
		if keys := listed(s.sec.Client(t, who)); !slices.Contains(keys, "alicerest-notes") {
			t.Errorf("%s lists %v through the follower, want alicerest-notes", who, keys)
		}
	}
	if keys := listed(s.sec.Client(t, "trudy")); slices.Contains(keys, "alicerest-notes") {
		t.Errorf("trudy lists %v through the follower: alice's blob is not hers to see", keys)
	}
	code, body := call(s.sec.Client(t, "bob"), http.MethodGet, "/api/v1/blobstore/alicerest-notes")
	if code != http.StatusOK || body["owner"] != "alice" || body["contentSha256"] != fmt.Sprintf("%x", sha256.Sum256([]byte("notes"))) {
		t.Errorf("bob reads the blob's entry: %d %v, want alice's, with the content's SHA-256", code, body)
	}
	code, hidden := call(s.sec.Client(t, "trudy"), http.MethodGet, "/api/v1/blobstore/alicerest-notes")
	_, absent := call(s.sec.Client(t, "trudy"), http.MethodGet, "/api/v1/blobstore/nobodys-notes")
	if code != http.StatusNotFound || strings.ReplaceAll(fmt.Sprint(absent["errorMessage"]), "nobodys", "alicerest") != fmt.Sprint(hidden["errorMessage"]) {
		t.Errorf("trudy reads alice's blob's entry: %d %v, want the 404 of a key no blob has (%v)", code, hidden, absent)
	}
}

// waitAudit waits for an audit line in p's log with want's attributes
// (numbers compared as they print).
func waitAudit(t *testing.T, p *testcluster.Process, what string, want map[string]any) {
	t.Helper()
	testcluster.WaitFor(t, 5*time.Second, "the audit line of "+what+" on "+p.Name, func() error {
		for line := range strings.Lines(logText(t, p)) {
			var got map[string]any
			if !strings.Contains(line, `"msg":"audit"`) || json.Unmarshal([]byte(line), &got) != nil {
				continue
			}
			if hasAttrs(got, want) {
				return nil
			}
		}
		return fmt.Errorf("audit lines: %v", audits(t, p))
	})
}

// hasAttrs reports whether line has every attribute of want.
func hasAttrs(line, want map[string]any) bool {
	for k, v := range want {
		if got, ok := line[k]; !ok || fmt.Sprint(got) != fmt.Sprint(v) {
			return false
		}
	}
	return true
}
