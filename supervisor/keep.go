package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/keeper"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	"github.com/nimbusha/nimbus/workerproto"
)

// Workers outlive their supervisor (docs/ARCHITECTURE.md section 17): each
// run is held by a keeper process (package keeper) started from this
// binary, in a session of its own, with a socket in
// <storm.local.dir>/supervisor/keepers/<port>.sock. A supervisor that
// starts adopts the keepers it finds there before anything else; one that
// stops leaves them to count their adoption bound.

// keepers is where this supervisor's keepers live, and what they are
// started with.
type keepers struct {
	dir   string // <storm.local.dir>/supervisor/keepers, this process's user's only
	exe   string // this binary: a keeper is it with keeper.Command
	bound time.Duration
	grace time.Duration // supervisor.worker.shutdown.sleep.secs
}

// newKeepers makes the keepers' directory under dir.
func newKeepers(dir string, cfg *configs.Config) (keepers, error) {
	k := keepers{dir: filepath.Join(dir, "keepers"), bound: adoptionBound(cfg), grace: cfg.WorkerShutdownSleep}
	if err := os.MkdirAll(k.dir, 0o700); err != nil {
		return k, err
	}
	if err := os.Chmod(k.dir, 0o700); err != nil { // only this user may reach a keeper
		return k, err
	}
	exe, err := os.Executable()
	if err != nil {
		return k, fmt.Errorf("supervisor: its own binary, which its keepers run: %w", err)
	}
	k.exe = exe
	return k, nil
}

// adoptionBound is how long a keeper keeps its worker without a supervisor:
// short enough that the worker is gone before the nimbus could give its
// slot to another host. The nimbus does when the supervisor's registration
// goes, with its ZooKeeper session, at the earliest 2/3 of
// storm.zookeeper.session.timeout after the supervisor's last request (a
// session idles a third of its timeout at most), or when its heartbeat has
// not changed for nimbus.supervisor.timeout.secs, counted from a beat that
// may be supervisor.heartbeat.frequency.secs old. The bound keeps a fifth
// of the nearer of the two, at least a second and at most half, as margin
// for a keeper slow to act and a nimbus quick to.
func adoptionBound(cfg *configs.Config) time.Duration {
	safe := min(cfg.ZKSessionTimeout*2/3, cfg.SupervisorTimeout-cfg.SupervisorHeartbeat)
	return max(safe-max(safe/5, time.Second), safe/2)
}

// pingEvery is how often a supervisor tells a keeper it is here: a
// quarter of the bound, at most a second.
func (k keepers) pingEvery() time.Duration { return min(k.bound/4, time.Second) }

// socket is the keeper socket of the worker on port.
func (k keepers) socket(port int32) string {
	return filepath.Join(k.dir, strconv.Itoa(int(port))+".sock")
}

// start starts a keeper of l, whose Socket, bound and grace it fills in,
// with out as its output and the worker's, and connects to it.
func (k keepers) start(l keeper.Launch, out *os.File, port int32) (*keeper.Conn, error) {
	l.Socket, l.BoundMs, l.GraceMs = k.socket(port), k.bound.Milliseconds(), k.grace.Milliseconds()
	k.endLeftover(l.Socket)
	// The keeper's own lines (a worker ended, killed at the bound) go to a
	// log of its own, one per port, so that the worker's log and its tail
	// hold the worker's output only.
	log, err := os.OpenFile(strings.TrimSuffix(l.Socket, ".sock")+".log", os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	p, err := keeper.Start(k.exe, l, out, log)
	if err != nil {
		return nil, err
	}
	// Reaped by a goroutine of its own, which ends when the keeper does
	// or with this process: a keeper outlives the supervisor on purpose.
	go func() { _, _ = p.Wait() }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := keeper.Dial(ctx, l.Socket)
	if err != nil {
		_ = p.Kill() // the worker goes with it
		return nil, err
	}
	return conn, nil
}

// endLeftover makes sure no keeper holds a worker on socket's port before
// another is started there: one that still answers (its connection to this
// supervisor was lost) has its worker stopped first, so a slot never runs
// two; a dead one's socket is removed.
func (k keepers) endLeftover(socket string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	conn, err := keeper.Dial(ctx, socket)
	cancel()
	if err == nil {
		if conn.Stop(k.grace) == nil {
			select {
			case _, ok := <-conn.Exits():
				if ok {
					_ = conn.Release()
				}
			case <-time.After(k.grace + stopSlack):
			}
		}
		conn.Close()
	}
	_ = os.Remove(socket)
}

// found is a keeper found at start, and what its supervisor started.
type found struct {
	conn *keeper.Conn
	kept keptState
}

// adopt connects to every keeper in the directory. A socket nobody answers
// is a dead keeper's and is removed; a keeper whose state this supervisor
// cannot read is told to stop its worker.
func (k keepers) adopt(log *slog.Logger) []found {
	entries, err := os.ReadDir(k.dir)
	if err != nil {
		return nil
	}
	var out []found
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".sock") {
			continue
		}
		path := filepath.Join(k.dir, e.Name())
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := keeper.Dial(ctx, path)
		cancel()
		if err != nil {
			log.Info("removed the socket of a keeper that is gone", "socket", path, "err", err)
			_ = os.Remove(path)
			continue
		}
		var kept keptState
		if err := json.Unmarshal(conn.Hello().State, &kept); err != nil || kept.Spec.TopologyID == "" {
			log.Warn("a keeper's worker this supervisor cannot read: stopping it", "socket", path, "err", err)
			_ = conn.Stop(k.grace)
			conn.Close()
			continue
		}
		out = append(out, found{conn: conn, kept: kept})
	}
	return out
}

// keptState is what a supervisor hands its keeper at each start, for the
// supervisor that adopts it: what the run is (its spec and the status its
// file says), where its log started, and the worker's state before it
// (restarts, last exit and error). Fields are only ever added: a newer
// supervisor reads an older one's.
type keptState struct {
	Spec     workerSpec         `json:"spec"`
	Status   workerproto.Status `json:"status"`
	LogStart int64              `json:"log_start"`
	State    json.RawMessage    `json:"state"` // a clusterv1.WorkerState, protojson
}

// keptState is w's, for the run it is about to start.
func (w *worker) keptState() (json.RawMessage, error) {
	w.mu.Lock()
	state, err := protojson.Marshal(w.state)
	w.mu.Unlock()
	if err != nil {
		return nil, err
	}
	w.statusMu.Lock()
	st := w.topoStatus
	w.statusMu.Unlock()
	spec := w.spec
	spec.RestartGen = w.restarts.generation() // what this run answers
	return json.Marshal(keptState{Spec: spec, Status: st, LogStart: w.logStart, State: state})
}

// adoptWorker makes the worker a found keeper holds this supervisor's,
// running under ctx: its state as its previous supervisor left it, its
// files prepared (they were, for this run).
func adoptWorker(ctx context.Context, f found, policy launchPolicy, k keepers, log *slog.Logger, changed func()) (*worker, error) {
	state := new(clusterv1.WorkerState)
	if err := protojson.Unmarshal(f.kept.State, state); err != nil {
		return nil, fmt.Errorf("supervisor: the state of worker %s-%d: %w", f.kept.Spec.TopologyID, f.kept.Spec.Port, err)
	}
	w, ctx := newWorker(ctx, f.kept.Spec, f.kept.Status, policy, k, k.grace, log, changed)
	if h := f.conn.Hello(); h.Exit == nil {
		state.State, state.Pid = "running", int32(h.Pid) // in the first heartbeat already
	}
	w.state = state
	w.logStart = f.kept.LogStart
	w.prepared = true
	w.blobs = adoptedBlobs(f.kept.Spec) // its links stay as they are
	if as, err := workerAccount(policy.cfg, f.kept.Spec.Owner, policy.lookup); err == nil {
		w.owner = as
	} else {
		log.Warn("cannot tell whom an adopted worker runs as", "topology", f.kept.Spec.TopologyID, "err", err)
	}
	go func() {
		defer close(w.done)
		w.run(ctx, f.conn)
	}()
	return w, nil
}
