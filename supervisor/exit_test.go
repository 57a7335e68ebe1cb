package supervisor

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/keeper"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	"github.com/nimbusha/nimbus/validate"
)

func TestExitOf(t *testing.T) {
	three := 3
	code, sig := exitOf(exitError(&keeper.Exit{Code: &three}))
	if code == nil || *code != 3 || sig != "" {
		t.Fatalf("exit 3: code %v, signal %q", code, sig)
	}
	code, sig = exitOf(exitError(&keeper.Exit{Signal: syscall.SIGKILL.String()}))
	if code != nil || sig != "killed" {
		t.Fatalf("SIGKILL: code %v, signal %q", code, sig)
	}
	zero := 0
	code, _ = exitOf(exitError(&keeper.Exit{Code: &zero}))
	if code == nil || *code != 0 {
		t.Fatalf("clean exit: code %v", code)
	}
	if code, sig = exitOf(errors.New("refused")); code != nil || sig != "" {
		t.Fatalf("refused start: code %v, signal %q", code, sig)
	}
}

func TestReadTailKeepsTheLastRunsLastLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.log")
	earlier := "an earlier run\n"
	var run strings.Builder
	for i := range 15 {
		run.WriteString("line " + string(rune('a'+i)) + "\n")
	}
	if err := os.WriteFile(path, []byte(earlier+run.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	got := readTail(path, int64(len(earlier)))
	lines := strings.Split(got, "\n")
	if len(lines) != tailLines || lines[0] != "line f" || lines[9] != "line o" {
		t.Fatalf("tail = %q", got)
	}
	if got := readTail(path, int64(len(earlier)+run.Len())); got != "" {
		t.Fatalf("a run that printed nothing has tail %q", got)
	}
	if got := readTail(filepath.Join(t.TempDir(), "none"), 0); got != "" {
		t.Fatalf("missing file: %q", got)
	}
}

func TestReadTailCapsBytesAndDropsAPartialLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.log")
	long := strings.Repeat("x", 3000) + "\nshort end\n\xff\n"
	if err := os.WriteFile(path, []byte(long), 0o644); err != nil {
		t.Fatal(err)
	}
	got := readTail(path, 0)
	if got != "short end\n\uFFFD" {
		t.Fatalf("tail = %q", got)
	}
	if got := readTail(path, 0); len(got) > maxTailBytes {
		t.Fatalf("tail of %d bytes", len(got))
	}
}

func TestCapErrorAndTails(t *testing.T) {
	if got := capError(errors.New(strings.Repeat("é", 400))); len(got) > maxErrorBytes || !strings.HasPrefix(got, "é") || strings.ContainsRune(got, '\uFFFD') {
		t.Fatalf("capped error: %d bytes", len(got))
	}
	var ws []*clusterv1.WorkerState
	for range 40 {
		ws = append(ws, &clusterv1.WorkerState{LogTail: strings.Repeat("y", maxTailBytes)})
	}
	capTails(ws)
	total, kept := 0, 0
	for _, w := range ws {
		total += len(w.GetLogTail())
		if w.GetLogTail() != "" {
			kept++
		}
	}
	if total > maxHeartbeatTails || kept != maxHeartbeatTails/maxTailBytes {
		t.Fatalf("tails: %d bytes in %d workers", total, kept)
	}
}

// A heartbeat of a supervisor with 512 slots, every worker failing with the
// longest error and tail, fits a node at the default jute.maxbuffer.
func TestFailingHeartbeatFitsAZooKeeperNode(t *testing.T) {
	info := &clusterv1.SupervisorInfo{SupervisorId: strings.Repeat("s", 64), Host: strings.Repeat("h", 253)}
	code := int32(255)
	for port := range int32(512) {
		info.SlotPorts = append(info.SlotPorts, 6700+port)
		info.UsedPorts = append(info.UsedPorts, 6700+port)
		info.Workers = append(info.Workers, &clusterv1.WorkerState{
			TopologyId: strings.Repeat("t", 170), Port: 6700 + port, Pid: 1 << 30, State: "backoff", Restarts: 1 << 30,
			LastError: strings.Repeat("e", maxErrorBytes), LastExitCode: &code, LastExitSignal: "segmentation fault",
			LastErrorUnixMs: 1 << 62, LogTail: strings.Repeat("y", maxTailBytes),
		})
	}
	capTails(info.Workers)
	if size, budget := proto.Size(info), validate.ZKNodeBudget(configs.DefaultZKMaxBuffer); size > budget {
		t.Fatalf("heartbeat of %d bytes, budget %d", size, budget)
	}
}
