package supervisor

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"

	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/keeper"
	"github.com/nimbusha/nimbus/workerproto"
)

// launchPolicy is how this supervisor starts workers: as whom, with what
// environment. newLaunchPolicy gives the real one.
type launchPolicy struct {
	cfg     *configs.Config
	lookup  lookupFunc                  // a local user by name
	environ func(string) (string, bool) // the supervisor's environment
}

func newLaunchPolicy(cfg *configs.Config) launchPolicy {
	return launchPolicy{cfg: cfg, lookup: lookupAccount, environ: os.LookupEnv}
}

// command prepares one start of the worker, in this order: whom it runs
// as (workerAccount: with supervisor.run.worker.as.user, its owner's
// user, never root), its environment (workerEnv), its code's ownership
// and modes (grantCode) and that the user can reach it, its directory
// with the worker protocol's files (prepareFiles), its log's directory
// (prepareLog), and the program (found on the supervisor's PATH, as
// exec.Command finds it). A refusal comes before anything is touched. It
// returns the keeper's launch (keep.go fills in the keeper's own part),
// with the log the keeper writes (logOutput), and as, the user the worker
// runs as (nil: the supervisor's own).
func (w *worker) command() (l keeper.Launch, as *account, err error) {
	p := w.policy
	if as, err = workerAccount(p.cfg, w.spec.Owner, p.lookup); err != nil {
		return keeper.Launch{}, nil, err
	}
	who := as
	if who == nil {
		who = currentAccount()
	}
	storm := []string{
		"STORM_TOPOLOGY_ID=" + w.spec.TopologyID,
		fmt.Sprintf("STORM_PORT=%d", w.spec.Port),
		"STORM_EXECUTORS=" + w.spec.Executors,
		"STORM_CODE_DIR=" + w.spec.CodeDir,
		workerproto.EnvStatusFile + "=" + filepath.Join(w.spec.Dir, workerproto.StatusFileName),
		workerproto.EnvErrorFile + "=" + filepath.Join(w.spec.Dir, workerproto.ErrorFileName),
		workerproto.EnvMetricsFile + "=" + metricsPath(w.spec.Dir),
		workerproto.EnvLogLevelFile + "=" + filepath.Join(w.spec.Dir, workerproto.LogLevelFileName),
	}
	if len(w.spec.Blobs) > 0 {
		storm = append(storm, workerproto.EnvBlobsFile+"="+filepath.Join(w.spec.Dir, workerproto.BlobsFileName))
	}
	env, err := workerEnv(envSources{
		Storm: storm,
		User:  who, Pass: p.cfg.SupervisorWorkerEnv, Lookup: p.environ, Topology: w.spec.Env,
	})
	if err != nil {
		return keeper.Launch{}, nil, err
	}
	if err := grantCode(w.spec.CodeDir, as); err != nil {
		return keeper.Launch{}, nil, fmt.Errorf("supervisor: code of %s: %w", w.spec.TopologyID, err)
	}
	if as != nil {
		if err := reachable(w.spec.CodeDir, as); err != nil {
			return keeper.Launch{}, nil, err
		}
	}
	if err := w.prepareFiles(as); err != nil {
		return keeper.Launch{}, nil, fmt.Errorf("supervisor: files of worker %s-%d: %w", w.spec.TopologyID, w.spec.Port, err)
	}
	if err := w.placeBlobs(as); err != nil {
		return keeper.Launch{}, nil, fmt.Errorf("supervisor: blobs of worker %s-%d: %w", w.spec.TopologyID, w.spec.Port, err)
	}
	if as != nil {
		if err := reachable(w.spec.Dir, as); err != nil {
			return keeper.Launch{}, nil, err
		}
	}
	cmd := exec.Command(w.spec.Argv[0], w.spec.Argv[1:]...)
	if cmd.Err != nil {
		return keeper.Launch{}, nil, cmd.Err
	}
	w.useLogLayout()
	if err := w.prepareLog(as); err != nil {
		return keeper.Launch{}, nil, fmt.Errorf("supervisor: log of worker %s-%d: %w", w.spec.TopologyID, w.spec.Port, err)
	}
	// Its keeper starts it in its own process group, so stopping it stops
	// its children too, and with the parent-death signal: it dies with its
	// keeper (package keeper).
	l = keeper.Launch{Path: cmd.Path, Argv: w.spec.Argv, Dir: w.spec.CodeDir, Env: env, Output: w.logOutput(as)}
	if as != nil {
		l.Credential = as.credential()
	}
	return l, as, nil
}

// currentAccount is the supervisor's own user, for the HOME, USER and
// LOGNAME of workers that run as it; nil if it has no passwd entry.
func currentAccount() *account {
	u, err := user.Current()
	if err != nil {
		return nil
	}
	return &account{Name: u.Username, Home: u.HomeDir}
}

// checkPrivileges refuses to start a supervisor that must run workers as
// users but is not root, and warns about one that runs them as root.
func (s *Supervisor) checkPrivileges() error {
	warning, err := checkPrivileges(s.cfg, os.Geteuid())
	if warning != "" {
		s.log.Warn(warning)
	}
	return err
}
