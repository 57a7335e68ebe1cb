package supervisor

import (
	"errors"
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

// A heartbeat of a supervisor with 512 slots, every worker failing with the
// longest error, fits a node at the default jute.maxbuffer.
func TestFailingHeartbeatFitsAZooKeeperNode(t *testing.T) {
	info := &clusterv1.SupervisorInfo{SupervisorId: strings.Repeat("s", 64), Host: strings.Repeat("h", 253)}
	code := int32(255)
	for port := range int32(512) {
		info.SlotPorts = append(info.SlotPorts, 6700+port)
		info.UsedPorts = append(info.UsedPorts, 6700+port)
		info.Workers = append(info.Workers, &clusterv1.WorkerState{
			TopologyId: strings.Repeat("t", 170), Port: 6700 + port, Pid: 1 << 30, State: "backoff", Restarts: 1 << 30,
			LastError: strings.Repeat("e", maxErrorBytes), LastExitCode: &code, LastExitSignal: "segmentation fault",
			LastErrorUnixMs: 1 << 62,
		})
	}
	if size, budget := proto.Size(info), validate.ZKNodeBudget(configs.DefaultZKMaxBuffer); size > budget {
		t.Fatalf("heartbeat of %d bytes, budget %d", size, budget)
	}
}
