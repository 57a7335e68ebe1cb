package supervisor

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"

	"github.com/nimbusha/nimbus/codedistributor"
	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/keeper"
)

// Why a worker is refused before it starts. The slot stays empty and the
// worker retries with backoff; the error is its heartbeat's last error.
var (
	// ErrNoWorkerUser: with supervisor.run.worker.as.user on, the
	// topology's owner maps to no local user (no owner, or no such user).
	ErrNoWorkerUser = errors.New("supervisor: no local user to run the worker as")
	// ErrRootWorker: the owner maps to uid 0, or to a user in group 0.
	ErrRootWorker = errors.New("supervisor: workers never run as root")
)

// account is a local user a worker runs as: what os/user says of it.
type account struct {
	Name   string
	UID    uint32
	GID    uint32   // primary group
	Groups []uint32 // every group, the primary one included
	Home   string
}

// credential is what a keeper starts a worker run as a with.
func (a *account) credential() *keeper.Credential {
	return &keeper.Credential{UID: a.UID, GID: a.GID, Groups: a.Groups}
}

// inGroup reports whether gid is one of a's groups.
func (a *account) inGroup(gid uint32) bool { return gid == a.GID || slices.Contains(a.Groups, gid) }

// lookupFunc finds a local user by name; lookupAccount (os/user) is the
// real one.
type lookupFunc func(name string) (*account, error)

// lookupAccount looks name up with os/user: passwd for the ids and home,
// the group database for the supplementary groups.
func lookupAccount(name string) (*account, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, err
	}
	return accountOf(u)
}

func accountOf(u *user.User) (*account, error) {
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("supervisor: user %s has uid %q", u.Username, u.Uid)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("supervisor: user %s has gid %q", u.Username, u.Gid)
	}
	a := &account{Name: u.Username, UID: uint32(uid), GID: uint32(gid), Home: u.HomeDir}
	ids, err := u.GroupIds()
	if err != nil {
		return nil, fmt.Errorf("supervisor: groups of user %s: %w", u.Username, err)
	}
	for _, id := range ids {
		g, err := strconv.ParseUint(id, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("supervisor: user %s is in group %q", u.Username, id)
		}
		if !slices.Contains(a.Groups, uint32(g)) {
			a.Groups = append(a.Groups, uint32(g))
		}
	}
	if !slices.Contains(a.Groups, a.GID) {
		a.Groups = append(a.Groups, a.GID)
	}
	return a, nil
}

// workerAccount decides whom a worker of a topology owned by owner runs
// as. With supervisor.run.worker.as.user off it returns nil: the worker
// runs as the supervisor does. With it on, the owner's local user
// (storm.principal.tolocal), looked up with lookup; never one with uid 0
// or in group 0, and never "no user".
func workerAccount(cfg *configs.Config, owner string, lookup lookupFunc) (*account, error) {
	if !cfg.RunWorkerAsUser {
		return nil, nil
	}
	if owner == "" {
		return nil, fmt.Errorf("%w: the topology has no owner (%s is on)", ErrNoWorkerUser, configs.KeyRunWorkerAsUser)
	}
	name := cfg.LocalUser(owner)
	if name == "" {
		return nil, fmt.Errorf("%w: owner %q maps to no local user name (%s)", ErrNoWorkerUser, owner, configs.KeyPrincipalToLocal)
	}
	a, err := lookup(name)
	var unknown user.UnknownUserError
	switch {
	case errors.As(err, &unknown):
		return nil, fmt.Errorf("%w: owner %q maps to local user %q, which does not exist on this host", ErrNoWorkerUser, owner, name)
	case err != nil:
		return nil, fmt.Errorf("supervisor: look up local user %q of owner %q: %w", name, owner, err)
	}
	if a.UID == 0 {
		return nil, fmt.Errorf("%w: owner %q maps to local user %q, uid 0", ErrRootWorker, owner, a.Name)
	}
	if a.inGroup(0) {
		return nil, fmt.Errorf("%w: owner %q maps to local user %q (uid %d), a member of group 0", ErrRootWorker, owner, a.Name, a.UID)
	}
	return a, nil
}

// checkPrivileges is the supervisor's own check at start: only root can
// start workers as other users, so supervisor.run.worker.as.user needs a
// supervisor running as root (euid 0). It returns a warning to log when
// workers would run as root.
func checkPrivileges(cfg *configs.Config, euid int) (warning string, err error) {
	switch {
	case cfg.RunWorkerAsUser && euid != 0:
		return "", fmt.Errorf("supervisor: %s is true, but the supervisor runs as uid %d, not root: only root can start workers as their owners' users (run it as root, or set %s: false)",
			configs.KeyRunWorkerAsUser, euid, configs.KeyRunWorkerAsUser)
	case !cfg.RunWorkerAsUser && euid == 0:
		return fmt.Sprintf("workers run as root: whoever may submit a topology runs commands as root on this host; set %s: true", configs.KeyRunWorkerAsUser), nil
	}
	return "", nil
}

// Modes of a topology's code when its workers run as a user (their logs'
// are the logviewer's: logviewer.DirMode, FileMode): owned by root, group
// the user's primary group. The user reads and
// runs its code but cannot change what the supervisor verified (and
// serves to peers); other users, other topologies' included, get nothing.
const (
	codeDirMode  fs.FileMode = 0o750
	codeFileMode fs.FileMode = 0o640
	artifactMode fs.FileMode = 0o750 // often the program itself
)

// grantCode sets the ownership and modes of a topology's code dir (the
// dir, everything in it) for workers run as a; with a nil, as today:
// root-only dir, artifact executable. Symbolic links and other special
// files are left alone (bundles have none). It runs before every start:
// Install puts a fresh copy (root-only) in place after a corrupt report.
func grantCode(dir string, a *account) error {
	artifact := filepath.Join(dir, codedistributor.ArtifactFile)
	if a == nil {
		return os.Chmod(artifact, 0o755)
	}
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		mode := codeFileMode
		switch {
		case d.IsDir():
			mode = codeDirMode
		case !d.Type().IsRegular():
			return nil
		case path == artifact:
			mode = artifactMode
		}
		if err := os.Lchown(path, 0, int(a.GID)); err != nil {
			return err
		}
		return os.Chmod(path, mode)
	})
}

// reachable checks that a can reach dir: search (x) permission on every
// directory above it, as the kernel will check when the worker, already
// running as a, changes into its code dir. Its error names the directory
// that stops it.
func reachable(dir string, a *account) error {
	for p := filepath.Dir(dir); ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		sys, ok := st.Sys().(*syscall.Stat_t)
		if ok && !canSearch(st.Mode(), sys.Uid, sys.Gid, a) {
			return fmt.Errorf("supervisor: user %s (uid %d) cannot reach %s: %s is mode %v, owner %d, group %d; workers that run as users need search (x) permission on every directory above their code",
				a.Name, a.UID, dir, p, st.Mode().Perm(), sys.Uid, sys.Gid)
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

// canSearch reports whether a may search a directory of mode, owner uid
// and group gid, by the owner, group, other classes.
func canSearch(mode fs.FileMode, uid, gid uint32, a *account) bool {
	switch {
	case uid == a.UID:
		return mode&0o100 != 0
	case a.inGroup(gid):
		return mode&0o010 != 0
	}
	return mode&0o001 != 0
}
