package validate

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// widestAssignment builds the largest assignment the scheduler could write
// for these executors and workers: every supervisor id supervisorIDLen
// bytes, as many supervisors as workers (or executors), every host hostLen
// bytes, and the numbers at their widest encodings (negative values take
// 10 bytes).
func widestAssignment(executors map[string]int32, workers int32, supervisorIDLen, hostLen int) *clusterv1.Assignment {
	a := &clusterv1.Assignment{SupervisorHosts: map[string]string{}, CodeMetaDigest: make([]byte, 32), Epoch: -1}
	var ids []string
	task := int32(1)
	for _, c := range slices.Sorted(maps.Keys(executors)) {
		for range executors[c] {
			if len(ids) < int(max(workers, 1)) {
				id := fmt.Sprintf("%0*d", supervisorIDLen, len(ids))
				ids = append(ids, id)
				a.SupervisorHosts[id] = strings.Repeat("h", hostLen)
			}
			a.Executors = append(a.Executors, &clusterv1.ExecutorAssignment{
				Executor:          &clusterv1.Executor{ComponentId: c, TaskStart: task, TaskEnd: task},
				Slot:              &clusterv1.Slot{SupervisorId: ids[int(task-1)%len(ids)], Port: -1},
				StartTimeUnixSecs: -1,
			})
			task++
		}
	}
	return a
}

// The bound is the size of the widest assignment exactly: across varint
// widths of the task numbers (1, 2 and 3 bytes), component ids of every
// length up to the longest allowed, and more workers than executors.
func TestAssignmentBoundIsTheWidestAssignmentsSize(t *testing.T) {
	long := strings.Repeat("c", maxComponentIDLen)
	for _, c := range []struct {
		name      string
		executors map[string]int32
		workers   int32
		sid, host int
	}{
		{"one executor", map[string]int32{"spout": 1}, 1, 20, 9},
		{"more workers than executors", map[string]int32{"spout": 2, "bolt": 3}, 40, 20, 9},
		{"tasks across the 1-2 byte varint edge", map[string]int32{"a": 100, "b": 100}, 7, 64, 253},
		{"tasks across the 2-3 byte varint edge", map[string]int32{"a": 16300, "b": 200}, 50, 20, 30},
		{"long ids", map[string]int32{long: 300, long[:127]: 2, "x": 1}, 3, 200, 1000},
		{"parallelism 0 has no executors", map[string]int32{"a": 0, "b": 5}, 2, 20, 9},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := AssignmentBound(c.executors, c.workers, c.sid, c.host)
			want := int64(proto.Size(widestAssignment(c.executors, c.workers, c.sid, c.host)))
			if got != want {
				t.Fatalf("AssignmentBound = %d, the widest assignment encodes to %d bytes", got, want)
			}
		})
	}
}

// The bound grows with what it bounds.
func TestAssignmentBoundGrows(t *testing.T) {
	base := AssignmentBound(map[string]int32{"a": 10}, 2, 20, 9)
	for name, b := range map[string]int64{
		"more executors": AssignmentBound(map[string]int32{"a": 11}, 2, 20, 9),
		"more workers":   AssignmentBound(map[string]int32{"a": 10}, 3, 20, 9),
		"longer ids":     AssignmentBound(map[string]int32{"a": 10}, 2, 21, 9),
		"longer hosts":   AssignmentBound(map[string]int32{"a": 10}, 2, 20, 10),
		"longer comp":    AssignmentBound(map[string]int32{"ab": 10}, 2, 20, 9),
	} {
		if b <= base {
			t.Errorf("%s: bound %d, not above %d", name, b, base)
		}
	}
	// Parallelism a rebalance could ask for (10,000 components of 10,000)
	// costs nothing to bound, and is far over any budget.
	huge := map[string]int32{}
	for i := range maxComponents {
		huge[fmt.Sprintf("c%05d", i)] = maxParallelism
	}
	if b := AssignmentBound(huge, maxNumWorkers, AssumedSupervisorIDLen, AssumedHostLen); b < int64(maxComponents)*maxParallelism*100 {
		t.Fatalf("bound %d for 10^8 executors", b)
	}
}

func TestZKNodeBudgetLeavesTheMargin(t *testing.T) {
	if got := ZKNodeBudget(1<<20 - 1); got != 1<<20-1-8<<10 {
		t.Fatalf("budget %d", got)
	}
	if ZKNodeBudget(64<<10) <= 0 { // the smallest storm.zookeeper.jute.maxbuffer configs accepts
		t.Fatal("no budget at the smallest jute.maxbuffer")
	}
}

func TestSpecArtifactBytes(t *testing.T) {
	spec := &nimbusv1.TopologySpec{Name: "wc", NumWorkers: 1, Components: []*nimbusv1.ComponentSpec{{Id: "s", Parallelism: 1}},
		WorkerCommand: []string{"w"}, ArtifactBytes: -1}
	if err := Spec(spec); err == nil || err.(*Error).Field != "spec.artifact_bytes" {
		t.Fatalf("negative artifact_bytes: %v", err)
	}
	spec.ArtifactBytes = 0 // not declared
	if err := Spec(spec); err != nil {
		t.Fatal(err)
	}
	spec.ArtifactBytes = 1 << 40 // the configured limit is the server's to check
	if err := Spec(spec); err != nil {
		t.Fatal(err)
	}
}
