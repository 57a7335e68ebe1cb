package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
)

// Where BenchmarkScale's time goes: with -scale-pprof DIR the nimbuses
// serve pprof, and the benchmark saves CPU profiles of the nimbus under
// load for each read-path row, of the leader while topologies are
// submitted and at steady state, and of the benchmark's own process (the
// load generator and the simulated supervisors) beside each row; every
// row also reports the CPU each process spent, so that what the cluster
// costs and what the load around it costs can be told apart.
var scalePprof = flag.String("scale-pprof", "", "directory for CPU profiles of BenchmarkScale (empty: none), one directory per size")

// profileDir is where the size being run saves its profiles (runScale).
var profileDir string

// pprofArgs are the nimbuses' extra flags when profiling.
func pprofArgs() []string {
	if *scalePprof == "" {
		return nil
	}
	return []string{"--storm.metrics.pprof.enable=true"}
}

// profile fetches a CPU profile of p over d into the -scale-pprof
// directory as name.pprof, in the background; the returned func waits for
// it. Without -scale-pprof it does nothing.
func profile(p *testcluster.Process, d time.Duration, name string) (wait func()) {
	if *scalePprof == "" {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := fetchProfile(p, d, filepath.Join(profileDir, name+".pprof")); err != nil {
			fmt.Fprintf(os.Stderr, "scale: profile %s: %v\n", name, err)
		}
	}()
	return func() { <-done }
}

func fetchProfile(p *testcluster.Process, d time.Duration, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), d+30*time.Second)
	defer cancel()
	url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", p.MetricsAddr(), int(d.Seconds()))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// profileSelf profiles this process (load generator and simulated
// supervisors) into name.pprof until the returned func is called. Without
// -scale-pprof it does nothing.
func profileSelf(name string) (stop func()) {
	if *scalePprof == "" {
		return func() {}
	}
	if err := os.MkdirAll(profileDir, 0o755); err != nil {
		fmt.Fprintf(os.Stderr, "scale: %v\n", err)
		return func() {}
	}
	f, err := os.Create(filepath.Join(profileDir, name+".pprof"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "scale: %v\n", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		fmt.Fprintf(os.Stderr, "scale: %v\n", err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// cpuMeter measures the CPU each named process spends over a window.
type cpuMeter struct {
	pids  map[string]int
	start map[string]time.Duration
	began time.Time
}

func startCPUMeter(pids map[string]int) *cpuMeter {
	m := &cpuMeter{pids: pids, start: map[string]time.Duration{}, began: time.Now()}
	for name, pid := range pids {
		m.start[name], _ = procCPU(pid)
	}
	return m
}

// String is each process's CPU over the window, in cores, busiest first.
func (m *cpuMeter) String() string {
	elapsed := time.Since(m.began)
	type use struct {
		name  string
		cores float64
	}
	var uses []use
	for name, pid := range m.pids {
		end, err := procCPU(pid)
		if err != nil {
			continue
		}
		uses = append(uses, use{name, float64(end-m.start[name]) / float64(elapsed)})
	}
	sort.Slice(uses, func(i, j int) bool { return uses[i].cores > uses[j].cores })
	var parts []string
	for _, u := range uses {
		parts = append(parts, fmt.Sprintf("%s %.2f", u.name, u.cores))
	}
	return strings.Join(parts, ", ")
}

// scalePids names the processes of a scale run: the nimbuses,
// ZooKeeper, and this one (the load generator and the simulated
// supervisors).
func scalePids(z *testcluster.ZooKeeper, leader *testcluster.Process, followers []*testcluster.Process) map[string]int {
	pids := map[string]int{"leader": leader.Pid(), "zookeeper": z.Pid(), "bench": os.Getpid()}
	for i, f := range followers {
		pids[fmt.Sprintf("follower-%d", i+1)] = f.Pid()
	}
	return pids
}

// undecoded is a client codec that sends requests as protobuf and counts
// an answer's bytes without decoding them: a load generator's own decoding
// would take the cores the nimbus under test needs.
type undecoded struct{}

func (undecoded) Marshal(v any) (mem.BufferSlice, error) {
	data, err := proto.Marshal(v.(proto.Message))
	return mem.BufferSlice{mem.SliceBuffer(data)}, err
}

func (undecoded) Unmarshal(data mem.BufferSlice, _ any) error {
	if data.Len() == 0 {
		return errors.New("empty answer")
	}
	return nil
}

func (undecoded) Name() string { return "proto" }

// decodeCost is the median time a Go client takes to decode m's encoding.
func decodeCost(m proto.Message) time.Duration {
	data, err := proto.Marshal(m)
	if err != nil {
		return 0
	}
	var took []time.Duration
	for range 20 {
		start := time.Now()
		if err := proto.Unmarshal(data, m.ProtoReflect().New().Interface()); err != nil {
			return 0
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	return took[len(took)/2].Round(10 * time.Microsecond)
}

// of is the CPU process name spent over the window so far.
func (m *cpuMeter) of(name string) time.Duration {
	end, err := procCPU(m.pids[name])
	if err != nil {
		return 0
	}
	return end - m.start[name]
}

// roleProcess is the name scalePids gives the nimbus a read row targets.
func roleProcess(role string) string {
	if role == "leader" {
		return "leader"
	}
	return "follower-1"
}
