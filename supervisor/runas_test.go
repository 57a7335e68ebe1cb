package supervisor

import (
	"errors"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/nimbusha/nimbus/codedistributor"
	"github.com/nimbusha/nimbus/configs"
)

// fakeUsers is a user database for workerAccount.
func fakeUsers(users ...*account) lookupFunc {
	return func(name string) (*account, error) {
		for _, a := range users {
			if a.Name == name {
				return a, nil
			}
		}
		if name == "ldap-down" {
			return nil, errors.New("nss: server unreachable")
		}
		return nil, user.UnknownUserError(name)
	}
}

func asUserConfig(mapping string) *configs.Config {
	cfg := configs.Default()
	cfg.RunWorkerAsUser = true
	cfg.PrincipalToLocal = mapping
	return cfg
}

var (
	alice = &account{Name: "alice", UID: 1001, GID: 1001, Groups: []uint32{1001, 2000}, Home: "/home/alice"}
	users = fakeUsers(alice,
		&account{Name: "root", UID: 0, GID: 0, Groups: []uint32{0}, Home: "/root"},
		&account{Name: "toor", UID: 0, GID: 100, Groups: []uint32{100}}, // root by another name
		&account{Name: "wheel", UID: 1002, GID: 0, Groups: []uint32{0}},
		&account{Name: "admin", UID: 1003, GID: 1003, Groups: []uint32{1003, 0}},
	)
)

func TestWorkerAccount(t *testing.T) {
	tests := []struct {
		owner, mapping string
		want           *account
		err            error
		says           string // in the error
	}{
		{owner: "alice", want: alice},
		{owner: "alice/host.example.com@EXAMPLE.COM", mapping: configs.PrincipalToLocalKerberos, want: alice},
		{owner: "alice@EXAMPLE.COM", mapping: configs.PrincipalToLocalDefault, err: ErrNoWorkerUser, says: `"alice@EXAMPLE.COM", which does not exist`},
		{owner: "", err: ErrNoWorkerUser, says: "no owner"},
		{owner: "@EXAMPLE.COM", mapping: configs.PrincipalToLocalKerberos, err: ErrNoWorkerUser, says: "no local user name"},
		{owner: "mallory", err: ErrNoWorkerUser, says: `local user "mallory", which does not exist`},
		{owner: "root", err: ErrRootWorker, says: "uid 0"},
		{owner: "root/admin@EXAMPLE.COM", mapping: configs.PrincipalToLocalKerberos, err: ErrRootWorker, says: "uid 0"},
		{owner: "toor", err: ErrRootWorker, says: "uid 0"},
		{owner: "wheel", err: ErrRootWorker, says: "group 0"},
		{owner: "admin", err: ErrRootWorker, says: "group 0"},
		{owner: "ldap-down", says: "server unreachable"},
	}
	for _, tc := range tests {
		got, err := workerAccount(asUserConfig(tc.mapping), tc.owner, users)
		switch {
		case tc.want != nil && (err != nil || got != tc.want):
			t.Errorf("owner %q: %+v, %v; want %+v", tc.owner, got, err, tc.want)
		case tc.want == nil && (got != nil || err == nil || tc.err != nil && !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.says)):
			t.Errorf("owner %q: %+v, %v; want an error %v saying %q", tc.owner, got, err, tc.err, tc.says)
		}
	}
	// Without supervisor.run.worker.as.user: as the supervisor, nothing looked up.
	cfg := configs.Default()
	got, err := workerAccount(cfg, "root", func(string) (*account, error) { t.Fatal("looked up"); return nil, nil })
	if got != nil || err != nil {
		t.Fatalf("without %s: %+v, %v", configs.KeyRunWorkerAsUser, got, err)
	}
}

// The real user database (os/user): root is refused, a user that does
// not exist too.
func TestWorkerAccountWithTheHostsUsers(t *testing.T) {
	cfg := asUserConfig("")
	if _, err := workerAccount(cfg, "root", lookupAccount); !errors.Is(err, ErrRootWorker) {
		t.Fatalf("root: %v, want ErrRootWorker", err)
	}
	if _, err := workerAccount(cfg, "nimbus-no-such-user", lookupAccount); !errors.Is(err, ErrNoWorkerUser) {
		t.Fatalf("a user that does not exist: %v, want ErrNoWorkerUser", err)
	}
	root, err := lookupAccount("root")
	if err != nil || root.UID != 0 || !root.inGroup(0) || root.Home == "" {
		t.Fatalf("lookupAccount(root) = %+v, %v", root, err)
	}
}

func TestCheckPrivileges(t *testing.T) {
	on, off := asUserConfig(""), configs.Default()
	if _, err := checkPrivileges(on, 1000); err == nil || !strings.Contains(err.Error(), configs.KeyRunWorkerAsUser) || !strings.Contains(err.Error(), "uid 1000") {
		t.Fatalf("as.user on, not root: %v, want an error naming the key and the uid", err)
	}
	if warning, err := checkPrivileges(on, 0); warning != "" || err != nil {
		t.Fatalf("as.user on, root: %q, %v", warning, err)
	}
	if warning, err := checkPrivileges(off, 0); err != nil || !strings.Contains(warning, configs.KeyRunWorkerAsUser) {
		t.Fatalf("as.user off, root: %q, %v; want a warning naming the key", warning, err)
	}
	if warning, err := checkPrivileges(off, 1000); warning != "" || err != nil {
		t.Fatalf("as.user off, not root: %q, %v", warning, err)
	}
}

func TestCanSearch(t *testing.T) {
	tests := []struct {
		mode     fs.FileMode
		uid, gid uint32
		want     bool
	}{
		{0o700, 1001, 0, true},     // alice's own
		{0o070, 1001, 1001, false}, // the owner class decides for the owner
		{0o750, 0, 2000, true},     // a supplementary group
		{0o750, 0, 1001, true},     // the primary group
		{0o705, 0, 1001, false},    // the group class decides for members
		{0o750, 0, 0, false},       // someone else's group
		{0o711, 0, 0, true},        // others may search
		{0o755, 0, 0, true},
		{0o700, 0, 0, false},
		{0o766, 0, 0, false}, // read without search
	}
	for _, tc := range tests {
		if got := canSearch(tc.mode, tc.uid, tc.gid, alice); got != tc.want {
			t.Errorf("canSearch(%v, owner %d, group %d) = %v, want %v", tc.mode, tc.uid, tc.gid, got, tc.want)
		}
	}
}

// needsRoot fails a test that changes ownership when not run as root; the
// tests run as root.
func needsRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("this test changes files' owners: run it as root")
	}
}

func TestReachable(t *testing.T) {
	base := t.TempDir()
	code := filepath.Join(base, "supervisor", "code", "t-1-1")
	if err := os.MkdirAll(code, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(base, 0o700); err != nil {
		t.Fatal(err)
	}
	err := reachable(code, alice)
	if err == nil || !strings.Contains(err.Error(), base+" is mode -rwx------") {
		t.Fatalf("reachable through a 0700 directory: %v", err)
	}
	for _, d := range []string{filepath.Dir(base), base} {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	if err := reachable(code, alice); err != nil {
		t.Fatalf("reachable through 0711 and 0755 directories: %v", err)
	}
	if err := os.Chmod(code, 0o700); err != nil { // the code dir itself is grantCode's
		t.Fatal(err)
	}
	if err := reachable(code, alice); err != nil {
		t.Fatal(err)
	}
}

// bundle writes a code dir as the store installs one: root-only dir,
// files 0644.
func bundle(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "t-1-1")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{codedistributor.ArtifactFile, codedistributor.SpecFile, "meta.pb"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// owner returns a file's mode, uid and gid.
func owner(t *testing.T, path string) (fs.FileMode, uint32, uint32) {
	t.Helper()
	st, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	sys := st.Sys().(*syscall.Stat_t)
	return st.Mode().Perm(), sys.Uid, sys.Gid
}

func TestGrantCode(t *testing.T) {
	needsRoot(t)
	dir := bundle(t)
	if err := os.Symlink("/etc/shadow", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := grantCode(dir, alice); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]fs.FileMode{"": 0o750, codedistributor.ArtifactFile: 0o750, codedistributor.SpecFile: 0o640, "meta.pb": 0o640} {
		if mode, uid, gid := owner(t, filepath.Join(dir, name)); mode != want || uid != 0 || gid != alice.GID {
			t.Errorf("%q: mode %v, owner %d:%d; want %v, 0:%d", name, mode, uid, gid, want, alice.GID)
		}
	}
	if _, _, gid := owner(t, "/etc/shadow"); gid == alice.GID {
		t.Fatal("grantCode followed a symbolic link")
	}
	if _, _, gid := owner(t, filepath.Join(dir, "link")); gid == alice.GID {
		t.Fatal("grantCode changed a symbolic link")
	}

	// Without a user: today's modes, the artifact executable.
	dir = bundle(t)
	if err := grantCode(dir, nil); err != nil {
		t.Fatal(err)
	}
	if mode, _, _ := owner(t, filepath.Join(dir, codedistributor.ArtifactFile)); mode != 0o755 {
		t.Fatalf("artifact mode %v, want 0755", mode)
	}
	if mode, _, _ := owner(t, dir); mode != 0o700 {
		t.Fatalf("code dir mode %v, want 0700 as installed", mode)
	}
}
