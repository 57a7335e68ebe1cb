package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
)

// What BenchmarkWorkerStats asks the nimbuses over HTTP: topology pages,
// one at a time, checked for counts, and a Prometheus scrape.

// topologyPage is the part of GET /api/v1/topology/:id the benchmark
// checks.
type topologyPage struct {
	StatsReported bool `json:"statsReported"`
	TopologyStats []struct {
		Window  string  `json:"window"`
		Emitted *uint64 `json:"emitted"`
	} `json:"topologyStats"`
	Bolts []struct {
		Executed *uint64 `json:"executed"`
	} `json:"bolts"`
}

// getTopology GETs a topology page, returning it and its size on the
// wire.
func getTopology(hc *http.Client, url string) (topologyPage, int, error) {
	var page topologyPage
	body, err := get(hc, url)
	if err != nil {
		return page, 0, err
	}
	return page, len(body), json.Unmarshal(body, &page)
}

func get(hc *http.Client, url string) ([]byte, error) {
	resp, err := hc.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s: %.200s", url, resp.Status, body)
	}
	return body, nil
}

// topologyLatency GETs /api/v1/topology/:id+query on p, in
// -workerstats-latency-rounds rounds of -workerstats-requests, one at a
// time, going round the topologies, and reports each round's latency
// (request sent to answer read), the answer's size and how many of the
// requests the nimbus itself took more than 1.6 ms to answer (its
// nimbus_http_request_duration_seconds buckets): the tail the client sees
// and the nimbus does not is the machine's. With metrics every answer must
// have counts; without, none.
func (ws *workerStatsCluster) topologyLatency(phase, role string, p *testcluster.Process, query string, metrics bool) error {
	tr := &http.Transport{MaxIdleConnsPerHost: 1}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	base := p.UIURL() + "/api/v1/topology/"
	if _, err := get(hc, base+ws.ids[0]+query); err != nil { // connected before the clock starts
		return err
	}
	var rounds []string
	var bytes, requests, incomplete int
	var firstIncomplete string
	slow0, err := slowAnswers(p)
	if err != nil {
		return err
	}
	for range max(*wsLatencyRounds, 1) {
		lats := make([]time.Duration, 0, *wsRequests)
		for n := range *wsRequests {
			id := ws.ids[(n*7919)%len(ws.ids)] // round the topologies, not in order
			t0 := time.Now()
			body, err := get(hc, base+id+query)
			lats = append(lats, time.Since(t0))
			if err != nil {
				return err
			}
			bytes += len(body)
			requests++
			var page topologyPage
			if err := json.Unmarshal(body, &page); err != nil {
				return fmt.Errorf("%s: %w", base+id+query, err)
			}
			if err := checkCounts(page, metrics); err != nil {
				if !metrics || ws.refused == 0 { // no bound explains it
					return fmt.Errorf("%s from %s: %w", base+id+query, p.Name, err)
				}
				if incomplete++; firstIncomplete == "" {
					firstIncomplete = fmt.Sprintf("%s: %v: %s", id, err, countsOf(body))
				}
			}
		}
		rounds = append(rounds, fmt.Sprintf("%v / %v / %v", percentile(lats, 50).Round(time.Microsecond),
			percentile(lats, 99).Round(time.Microsecond), percentile(lats, 100).Round(time.Microsecond)))
	}
	slow1, err := slowAnswers(p)
	if err != nil {
		return err
	}
	ws.rep.add(fmt.Sprintf("%s: GET /api/v1/topology/:id%s on the %s, %d rounds of %d requests one at a time: p50 / p99 / max each round; answered in more than 1.6 ms by the nimbus; answer bytes (mean)",
		phase, query, role, len(rounds), *wsRequests),
		fmt.Sprintf("%s; %d of %d; %d", strings.Join(rounds, "; "), slow1-slow0, requests, bytes/max(requests, 1)))
	if incomplete > 0 {
		ws.rep.add(fmt.Sprintf("%s: GET /api/v1/topology/:id%s on the %s: answers without some counts (the aggregator refused %d series past its bound)", phase, query, role, ws.refused),
			fmt.Sprintf("%d of %d", incomplete, requests))
		fmt.Fprintf(os.Stderr, "scale: an answer without some counts: %s\n", firstIncomplete)
	}
	return nil
}

// bucketBound is a histogram bucket line's le, rounded to 0.1 µs.
func bucketBound(line string) float64 {
	_, rest, ok := strings.Cut(line, `le="`)
	if !ok {
		return -1
	}
	le, _, _ := strings.Cut(rest, `"`)
	v, err := strconv.ParseFloat(le, 64)
	if err != nil {
		return -1
	}
	return math.Round(v*1e7) / 1e7
}

// slowAnswers is how many requests on the route /api/v1/topology/{id} p
// has taken more than 1.6 ms to answer since it started (the bucket bounds are 0.1
// ms times powers of 4).
func slowAnswers(p *testcluster.Process) (int64, error) {
	body, err := p.Metrics()
	if err != nil {
		return 0, err
	}
	var count, fast int64 = -1, -1
	for _, line := range strings.Split(body, "\n") {
		if !strings.Contains(line, `route="/api/v1/topology/{id}"`) {
			continue
		}
		f := strings.Fields(line)
		n, _ := strconv.ParseInt(f[len(f)-1], 10, 64)
		switch {
		case strings.HasPrefix(line, "nimbus_http_request_duration_seconds_count"):
			count = n
		case strings.HasPrefix(line, "nimbus_http_request_duration_seconds_bucket") && bucketBound(line) == 0.0016:
			fast = n
		}
	}
	if count < 0 || fast < 0 {
		return 0, fmt.Errorf("%s: no nimbus_http_request_duration_seconds of /api/v1/topology/{id}", p.Name)
	}
	return count - fast, nil
}

// countsOf is the part of a topology page that holds its counts.
func countsOf(body []byte) string {
	var page map[string]json.RawMessage
	if err := json.Unmarshal(body, &page); err != nil {
		return err.Error()
	}
	var out []string
	for _, key := range []string{"statsReported", "topologyStats", "spouts", "bolts"} {
		out = append(out, fmt.Sprintf("%s: %.1200s", key, page[key]))
	}
	return strings.Join(out, "; ")
}

// checkCounts checks that a topology page has counts when the workers
// report metrics (statsReported, the topology's emitted for all time and
// its bolts' executed) and none when they do not.
func checkCounts(page topologyPage, metrics bool) error {
	if !metrics {
		if page.StatsReported {
			return errors.New("counts although no worker reported any")
		}
		return nil
	}
	if !page.StatsReported {
		return errors.New("no counts although every worker reports")
	}
	for _, w := range page.TopologyStats {
		if w.Window == ":all-time" && (w.Emitted == nil || *w.Emitted == 0) {
			return errors.New("no tuples emitted for all time")
		}
	}
	for _, bolt := range page.Bolts {
		if bolt.Executed == nil {
			return errors.New("a bolt without executed")
		}
	}
	return nil
}

// scrape reports what a Prometheus scrape of the leader costs (the
// median of 5: the time to the last byte and the leader's CPU), and the
// series its aggregator keeps.
func (ws *workerStatsCluster) scrape(phase string) error {
	var took, cpu []time.Duration
	var body string
	for range 5 {
		cpu0, err := procCPU(ws.leader.Pid())
		if err != nil {
			return err
		}
		t0 := time.Now()
		if body, err = ws.leader.Metrics(); err != nil {
			return err
		}
		took = append(took, time.Since(t0))
		cpu1, err := procCPU(ws.leader.Pid())
		if err != nil {
			return err
		}
		cpu = append(cpu, cpu1-cpu0)
	}
	kept, refused := "?", "?"
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, `nimbus_stats_series{state="kept"} `); ok {
			kept = v
		}
		if v, ok := strings.CutPrefix(line, `nimbus_stats_series{state="refused"} `); ok {
			refused = v
			n, _ := strconv.ParseFloat(v, 64) // Prometheus writes 1.1e+06
			ws.refused = int64(n)
		}
	}
	ws.rep.add(phase+": the leader's /metrics, median of 5 scrapes: time, the leader's CPU, bytes; stats series kept, refused",
		fmt.Sprintf("%v, %v, %d; %s, %s", percentile(took, 50).Round(time.Millisecond), percentile(cpu, 50).Round(time.Millisecond), len(body), kept, refused))
	return nil
}
