package stormapi

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nimbusha/nimbus/auth"
	"github.com/nimbusha/nimbus/configs"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// gunzip decodes a gzip stream twice, with Go's reader and with GNU gzip's
// own inflate (an independent implementation), and fails unless both
// give the same bytes and check its CRC-32 and length.
func gunzip(t *testing.T, stream []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(stream))
	if err != nil {
		t.Fatal(err)
	}
	zr.Multistream(false) // one member: the appended blocks must be in it
	goOut, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("Go's gzip reader: %v", err)
	}
	cmd := exec.Command("gzip", "-dc")
	cmd.Stdin = bytes.NewReader(stream)
	gnuOut, err := cmd.Output()
	if err != nil {
		t.Fatalf("gzip -dc: %v", err)
	}
	if !bytes.Equal(goOut, gnuOut) {
		t.Fatalf("Go's reader and gzip -dc disagree: %d and %d bytes", len(goOut), len(gnuOut))
	}
	return goOut
}

// A shared head compressed once, then tails appended as stored blocks:
// every decoder reads the head and the tail, whatever the tail's size
// (none, small, more than one stored block), and a wrong CRC is caught.
func TestGzipAnswerIsTheHeadAndItsTail(t *testing.T) {
	head := []byte(`{"topologies":[` + strings.Repeat(`{"id":"t-1","status":"ACTIVE"},`, 3000))
	sep := []byte(`{"last":true}],`) // what opened leaves of the body's end
	b := &sharedBody{json: append(append([]byte{}, head...), `{"last":true}]}`...)}
	for _, n := range []int{0, 1, 90, 1<<16 - 1, 1 << 16, 200_000} {
		tail := bytes.Repeat([]byte("x"), n)
		got := gunzip(t, gzipAnswer(b.head(), tail))
		if want := append(append(append([]byte{}, head...), sep...), tail...); !bytes.Equal(got, want) {
			t.Fatalf("tail of %d bytes: decoded %d bytes, want %d", n, len(got), len(want))
		}
	}
	stream := gzipAnswer(b.head(), []byte("tail"))
	stream[len(stream)-8] ^= 1 // the CRC-32
	zr, err := gzip.NewReader(bytes.NewReader(stream))
	if err == nil {
		_, err = io.ReadAll(zr)
	}
	if err == nil {
		t.Fatal("a stream with a wrong CRC-32 decoded without error")
	}
	if len(b.gz.stream) > (len(head)+len(sep))/4 {
		t.Errorf("the head compressed to %d of %d bytes", len(b.gz.stream), len(head)+len(sep))
	}
}

func TestAcceptsGzip(t *testing.T) {
	for header, want := range map[string]bool{
		"": false, "gzip": true, "GZIP": true, "gzip, deflate, br": true, "br;q=1.0, gzip;q=0.8": true,
		"x-gzip": true, "*": true, "identity": false, "gzip;q=0": false, "gzip;q=0, *": false,
		"*;q=0": false, "deflate": false, "gzip;q=bad": false, "identity, *;q=0.5": true,
	} {
		if got := acceptsGzip(header); got != want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", header, got, want)
		}
	}
}

// clusterReads answers GetClusterInfo with n topologies, the rest of
// Reader being unused here.
type clusterReads struct {
	Reader
	info atomic.Pointer[nimbusv1.GetClusterInfoResponse]
}

func (c *clusterReads) GetClusterInfo(context.Context, *nimbusv1.GetClusterInfoRequest) (*nimbusv1.GetClusterInfoResponse, error) {
	return c.info.Load(), nil
}

// Over HTTP: a client that accepts gzip gets the topology list
// compressed, the same JSON as a client that does not, extras included;
// a small answer is sent as it is.
func TestServeSendsSharedSummariesGzipped(t *testing.T) {
	info := &nimbusv1.GetClusterInfoResponse{Cluster: &nimbusv1.ClusterSummary{}}
	for i := range 500 {
		info.Cluster.Topologies = append(info.Cluster.Topologies, &nimbusv1.TopologySummary{
			Id: fmt.Sprintf("t-%d-1", i), Name: fmt.Sprintf("t-%d", i), Status: clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE, NumWorkers: 2,
		})
	}
	authz, err := auth.New(configs.Default(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	reads := &clusterReads{}
	reads.info.Store(info)
	srv := httptest.NewServer(New(Config{Reads: reads, Authz: authz,
		State: func() State { return State{Leader: "n:1", CacheAge: 1500 * time.Millisecond} }}))
	defer srv.Close()
	get := func(path, encoding string) (*http.Response, []byte) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if encoding != "" {
			req.Header.Set("Accept-Encoding", encoding)
		}
		tr := &http.Transport{DisableCompression: true} // as sent, not decoded
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, body
	}
	plainResp, plain := get("/api/v1/topology/summary", "")
	gzResp, gz := get("/api/v1/topology/summary", "gzip, deflate")
	if plainResp.Header.Get("Content-Encoding") != "" || gzResp.Header.Get("Content-Encoding") != "gzip" ||
		gzResp.Header.Get("Vary") != "Accept-Encoding" {
		t.Fatalf("Content-Encoding %q and %q (Vary %q), want none and gzip", plainResp.Header.Get("Content-Encoding"),
			gzResp.Header.Get("Content-Encoding"), gzResp.Header.Get("Vary"))
	}
	if len(gz)*5 > len(plain) {
		t.Errorf("gzip answer of %d bytes for %d bytes of JSON", len(gz), len(plain))
	}
	var want, got map[string]any
	if err := json.Unmarshal(plain, &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(gunzip(t, gz), &got); err != nil {
		t.Fatal(err)
	}
	if len(got["topologies"].([]any)) != 500 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("gzip answer decodes to another object than the plain one")
	}
	if got["cacheAgeMs"] != 1500.0 {
		t.Errorf("cacheAgeMs %v, want the request's extras", got["cacheAgeMs"])
	}

	reads.info.Store(&nimbusv1.GetClusterInfoResponse{Cluster: &nimbusv1.ClusterSummary{ // a new answer, small
		Topologies: info.Cluster.Topologies[:1]}})
	if resp, _ := get("/api/v1/topology/summary", "gzip"); resp.Header.Get("Content-Encoding") != "" {
		t.Errorf("a small answer was sent with Content-Encoding %q", resp.Header.Get("Content-Encoding"))
	}
}
