package stormapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

func TestPrettyUptime(t *testing.T) {
	for secs, want := range map[int64]string{
		-5: "0s", 0: "0s", 33: "33s", 213: "3m 33s", 3600: "1h 0m 0s", 86400: "1d 0h 0m 0s", 90061: "1d 1h 1m 1s",
	} {
		if got := prettyUptime(secs); got != want {
			t.Errorf("prettyUptime(%d) = %q, want %q", secs, got, want)
		}
	}
}

func TestParseWindow(t *testing.T) {
	for in, want := range map[string][2]string{
		"": {allTime, "All time"}, ":all-time": {allTime, "All time"}, "600": {"600", "10m 0s"}, "60": {"60", "1m 0s"},
	} {
		w, hint, err := parseWindow(url.Values{"window": {in}})
		if err != nil || w != want[0] || hint != want[1] {
			t.Errorf("parseWindow(%q) = %q, %q, %v; want %q, %q", in, w, hint, err, want[0], want[1])
		}
	}
	for _, bad := range []string{"garbage", "0", "-1", "1.5", "999999999999", ":all"} {
		if _, _, err := parseWindow(url.Values{"window": {bad}}); err == nil || !strings.HasPrefix(err.Error(), "window: ") {
			t.Errorf("parseWindow(%q) = %v, want an error naming window", bad, err)
		}
	}
}

func TestParseWait(t *testing.T) {
	for in, want := range map[string]int32{"0": 0, "30": 30, "86400": 86400} {
		if got, err := parseWait(in); err != nil || got != want {
			t.Errorf("parseWait(%q) = %d, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "abc", "-1", "86401", "99999999999", "1e3", "3s"} {
		if _, err := parseWait(bad); err == nil || !strings.HasPrefix(err.Error(), "wait-time: ") {
			t.Errorf("parseWait(%q) = %v, want an error naming wait-time", bad, err)
		}
	}
}

func TestConfValue(t *testing.T) {
	for _, tc := range []struct {
		key, text string
		want      any
	}{
		{"nimbus.grpc.port", "6627", int64(6627)},
		{"x", "007", "007"}, // not a number as written: kept as text
		{"x", "1.5", 1.5},
		{"x", "true", true},
		{"x", "localhost:6627", "localhost:6627"},
		{"nimbus.monitor.freq.secs", "10s", int64(10)},
		{"nimbus.code.sync.freq.secs", "2m0s", int64(120)},
		{"topology.max.replication.wait.time.sec", "1.5s", 1.5},
		{"storm.zookeeper.session.timeout", "20s", int64(20000)},
	} {
		if got := confValue(tc.key, tc.text); got != tc.want {
			t.Errorf("confValue(%q, %q) = %#v, want %#v", tc.key, tc.text, got, tc.want)
		}
	}
}

func TestJoin(t *testing.T) {
	for _, tc := range []struct{ a, b, want string }{
		{`{"a":1}`, `{"b":2}`, `{"a":1,"b":2}`},
		{`{}`, `{"b":2}`, `{"b":2}`},
		{"{\"a\":1}\n", `{"b":2}`, `{"a":1,"b":2}`},
	} {
		got := join([]byte(tc.a), []byte(tc.b))
		if string(got) != tc.want || !json.Valid(got) {
			t.Errorf("join(%s, %s) = %s, want %s", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestWhyNoLeader(t *testing.T) {
	topo := &nimbusv1.TopologySummary{Id: "wc-1-1", Name: "wc"}
	for _, tc := range []struct {
		name string
		cs   *nimbusv1.ClusterSummary
		st   State
		want []string
	}{
		{"not read yet", nil, State{}, []string{"not read the cluster's state yet"}},
		{"no nimbus", &nimbusv1.ClusterSummary{}, State{}, []string{"no nimbus is registered"}},
		{"code lost everywhere", &nimbusv1.ClusterSummary{
			Topologies: []*nimbusv1.TopologySummary{topo}, LeadershipBlockedBy: []string{"wc-1-1"},
			Nimbuses: []*nimbusv1.NimbusSummary{{Host: "a", Port: 1, MissingTopologyIds: []string{"wc-1-1"}}},
		}, State{}, []string{"topology wc (wc-1-1): no nimbus holds its code"}},
		{"each lacks some", &nimbusv1.ClusterSummary{Nimbuses: []*nimbusv1.NimbusSummary{
			{Host: "a", Port: 1, MissingTopologyIds: []string{"t1", "t2", "t3", "t4", "t5", "t6", "t7"}},
		}}, State{}, []string{"nimbus a:1 cannot lead: it lacks the code of t1, t2, t3, t4, t5 and 2 more"}},
		{"election", &nimbusv1.ClusterSummary{Nimbuses: []*nimbusv1.NimbusSummary{
			{Host: "a", Port: 1, HoldsAllCode: true}, {Host: "b", Port: 2, MissingTopologyIds: []string{"t1"}},
		}}, State{}, []string{"an election is under way: a:1 hold the code"}},
		{"root wiped", &nimbusv1.ClusterSummary{ClusterStateProblem: "cluster x is gone from ZooKeeper",
			Nimbuses: []*nimbusv1.NimbusSummary{{Host: "a", Port: 1, HoldsAllCode: true}}},
			State{}, []string{"cluster x is gone from ZooKeeper"}},
		{"no session", &nimbusv1.ClusterSummary{Nimbuses: []*nimbusv1.NimbusSummary{{Host: "a", Port: 1, HoldsAllCode: true}}},
			State{CacheAge: 3 * time.Second}, []string{"no ZooKeeper session for 3s", "an election is under way"}},
	} {
		got := whyNoLeader(tc.cs, tc.st)
		if len(got) != len(tc.want) {
			t.Errorf("%s: got %q, want %d reasons like %q", tc.name, got, len(tc.want), tc.want)
			continue
		}
		for i := range got {
			if !strings.Contains(got[i], tc.want[i]) {
				t.Errorf("%s: reason %d %q does not say %q", tc.name, i, got[i], tc.want[i])
			}
		}
	}
}

func TestReadRebalance(t *testing.T) {
	ok := map[string]*nimbusv1.RebalanceTopologyRequest{
		``:   {},
		`{}`: {},
		`{"rebalanceOptions":{"numWorkers":3,"executors":{"split":6,"count":"4"}}}`: {
			NumWorkers: ptr(int32(3)), ComponentParallelism: map[string]int32{"split": 6, "count": 4}},
		`{"rebalanceOptions":{"numWorkers":"2"}}`: {NumWorkers: ptr(int32(2))},
	}
	for body, want := range ok {
		got := &nimbusv1.RebalanceTopologyRequest{}
		if err := readRebalance(bodyRequest(body), got); err != nil {
			t.Errorf("%s: %v", body, err)
			continue
		}
		if got.GetNumWorkers() != want.GetNumWorkers() || len(got.GetComponentParallelism()) != len(want.GetComponentParallelism()) {
			t.Errorf("%s: got %v, want %v", body, got, want)
		}
		for c, n := range want.GetComponentParallelism() {
			if got.GetComponentParallelism()[c] != n {
				t.Errorf("%s: %s = %d, want %d", body, c, got.GetComponentParallelism()[c], n)
			}
		}
	}
	for body, field := range map[string]string{
		`not json`: "body", `{"rebalanceOptions":{"numWorkers":0}}`: "rebalanceOptions.numWorkers",
		`{"rebalanceOptions":{"numWorkers":"x"}}`:          "body", // json.Number refuses non-numbers
		`{"rebalanceOptions":{"executors":{"split":-1}}}`:  "rebalanceOptions.executors.split",
		`{"rebalanceOptions":{"executors":{"split":1.5}}}`: "rebalanceOptions.executors.split",
		`{"other":1}`: "body",
	} {
		err := readRebalance(bodyRequest(body), &nimbusv1.RebalanceTopologyRequest{})
		if err == nil || !strings.HasPrefix(err.Error(), field+": ") {
			t.Errorf("%s: got %v, want an error naming %s", body, err, field)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func bodyRequest(body string) *request {
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
	return &request{Request: r, ctx: r.Context()}
}

// TestWrite: the extras join any object, however it ends, into valid
// JSON of the length the header says.
func TestWrite(t *testing.T) {
	a := New(Config{})
	for _, body := range []string{`{}`, `{"a":{"b":{}}}`, "{\"a\":[]}\n"} {
		rec := httptest.NewRecorder()
		a.write(rec, http.StatusOK, []byte(body), nil, State{Leader: "n:1", CacheAge: 1500 * time.Millisecond})
		got := rec.Body.Bytes()
		var m map[string]any
		if err := json.Unmarshal(got, &m); err != nil {
			t.Fatalf("%s: %s: %v", body, got, err)
		}
		if m["cacheAgeMs"] != 1500.0 || m["leaderlessSeconds"] != 0.0 || rec.Header().Get("Content-Length") != strconv.Itoa(len(got)) {
			t.Errorf("%s: %s (Content-Length %s)", body, got, rec.Header().Get("Content-Length"))
		}
	}
}
