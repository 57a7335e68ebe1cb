package supervisor

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/nimbusha/nimbus/auth"
	"github.com/nimbusha/nimbus/codedistributor"
	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/logviewer"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/validate"
)

// desiredWorker is what the assignments ask of one of this supervisor's
// ports.
type desiredWorker struct {
	topologyID string
	digest     []byte
	executors  string
}

// desired reads this supervisor's part of every assignment.
func (s *Supervisor) desired() map[int32]desiredWorker {
	byPort := map[int32]map[string][]*clusterv1.Executor{}
	digests := map[string][]byte{}
	mine := map[int32]bool{} // an old assignment may name a port no longer ours
	for _, p := range s.cfg.SupervisorSlotsPorts {
		mine[int32(p)] = true
	}
	for id, a := range s.assignments.Snapshot() {
		if a == nil {
			continue
		}
		for _, ea := range a.GetExecutors() {
			if ea.GetSlot().GetSupervisorId() != s.id || !mine[ea.GetSlot().GetPort()] {
				continue
			}
			port := ea.GetSlot().GetPort()
			if byPort[port] == nil {
				byPort[port] = map[string][]*clusterv1.Executor{}
			}
			byPort[port][id] = append(byPort[port][id], ea.GetExecutor())
			digests[id] = a.GetCodeMetaDigest()
		}
	}
	out := map[int32]desiredWorker{}
	for port, tops := range byPort {
		// A slot hosts one topology; should two claim it, take one
		// deterministically and let the leader sort it out.
		ids := make([]string, 0, len(tops))
		for id := range tops {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		id := ids[0]
		out[port] = desiredWorker{topologyID: id, digest: digests[id], executors: formatExecutors(tops[id])}
	}
	return out
}

// formatExecutors renders STORM_EXECUTORS: component[start-end],...
func formatExecutors(execs []*clusterv1.Executor) string {
	sort.Slice(execs, func(i, j int) bool {
		if execs[i].GetComponentId() != execs[j].GetComponentId() {
			return execs[i].GetComponentId() < execs[j].GetComponentId()
		}
		return execs[i].GetTaskStart() < execs[j].GetTaskStart()
	})
	parts := make([]string, len(execs))
	for i, e := range execs {
		parts[i] = fmt.Sprintf("%s[%d-%d]", e.GetComponentId(), e.GetTaskStart(), e.GetTaskEnd())
	}
	return strings.Join(parts, ",")
}

// workerSpecFor builds the command of a desired worker from its
// topology's spec, installed with the code.
func (s *Supervisor) workerSpecFor(port int32, d desiredWorker) (workerSpec, error) {
	codeDir := s.store.Dir(d.topologyID)
	data, err := os.ReadFile(filepath.Join(codeDir, codedistributor.SpecFile))
	if err != nil {
		return workerSpec{}, err
	}
	spec := new(nimbusv1.TopologySpec)
	if err := proto.Unmarshal(data, spec); err != nil {
		return workerSpec{}, fmt.Errorf("spec of %s: %w", d.topologyID, err)
	}
	argv := validate.ExpandWorkerCommand(spec.GetWorkerCommand(),
		validate.WorkerValues{CodeDir: codeDir, Port: port, TopologyID: d.topologyID})
	if len(argv) == 0 {
		return workerSpec{}, fmt.Errorf("topology %s has no worker command", d.topologyID)
	}
	blobs, err := blobUses(spec.GetConfig())
	if err != nil {
		return workerSpec{}, fmt.Errorf("topology %s: %w", d.topologyID, err)
	}
	// Whom it runs as, its environment, its code's modes (the artifact is
	// often the program itself): decided at each start (launch.go).
	return workerSpec{
		TopologyID: d.topologyID, Port: port, Executors: d.executors, Argv: argv, CodeDir: codeDir,
		LogPath: filepath.Join(logviewer.WorkerDir(logviewer.Root(s.cfg.LocalDir), d.topologyID, port), logviewer.LogName),
		Dir:     filepath.Join(s.dir, "workers", fmt.Sprintf("%s-%d", d.topologyID, port)),
		Owner:   spec.GetOwner(), Env: spec.GetConfig()[configs.TopologyEnvironment],
		TopologyUsers: auth.TopologyUsers(spec.GetConfig()), LogsUsers: auth.ListOf(spec.GetConfig(), configs.TopologyLogsUsers),
		RestartGen: s.restartGeneration(d.topologyID, port),
		Blobs:      blobs,
	}, nil
}
