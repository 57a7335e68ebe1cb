package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	"github.com/nimbusha/nimbus/leader"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
)

// The cluster's credentials and an operator's, given every permission by
// the super ACL. The passwords must never appear in a log or an error.
const (
	clusterUser, clusterPassword = "nimbus", "n1mbus-pw-7f3a"
	adminUser, adminPassword     = "admin", "4dmin-pw-91c2"
)

var (
	clusterID = digestID(clusterUser, clusterPassword)
	adminID   = digestID(adminUser, adminPassword)
	// wantACL is the ACL of every node the daemons create with digest
	// authentication: the cluster and the admin may do anything, anyone
	// may read.
	wantACL = []zk.ACL{
		{Perms: zk.PermAll, Scheme: "digest", ID: clusterID},
		{Perms: zk.PermAll, Scheme: "digest", ID: adminID},
		{Perms: zk.PermRead, Scheme: "world", ID: "anyone"},
	}
)

func digestID(user, password string) string { return zk.DigestACL(zk.PermAll, user, password)[0].ID }

// connectAs opens a daemon's session, with digest authentication as
// payload unless it is "", and the admin as super ACL.
func connectAs(t *testing.T, addr, payload string, opt func(*cluster.SessionConfig)) *cluster.Session {
	t.Helper()
	cfg := cluster.SessionConfig{
		Servers: []string{addr}, SessionTimeout: 4 * time.Second, ConnectTimeout: 10 * time.Second,
		Root: "/storm", Logger: slog.New(slog.DiscardHandler),
	}
	if payload != "" {
		cfg.AuthScheme, cfg.AuthPayload, cfg.SuperACL = cluster.AuthDigest, payload, "digest:"+adminID
	}
	if opt != nil {
		opt(&cfg)
	}
	s, err := cluster.Connect(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func layout(p cluster.Paths) []string {
	return []string{p.LeaderLock(), p.Nimbuses(), p.Storms(), p.CodeDistributor(), p.Assignments(), p.Supervisors()}
}

// checkACL fails unless p carries wantACL. conn must have ADMIN on p:
// ZooKeeper shows other clients the digest identities as user:x.
func checkACL(conn *zk.Conn, p string) error {
	acl, _, err := conn.GetACL(p)
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	if !slices.Equal(acl, wantACL) {
		return fmt.Errorf("%s: ACL %v, want %v", p, acl, wantACL)
	}
	return nil
}

func topology(name string) (*clusterv1.StormBase, *clusterv1.CodeDistribution, *clusterv1.Assignment) {
	digest := make([]byte, 32)
	return &clusterv1.StormBase{Name: name, Status: clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE, CodeMetaDigest: digest, Epoch: 1},
		&clusterv1.CodeDistribution{CodeMetaDigest: digest, Epoch: 1, CreatedUnixMs: 1},
		&clusterv1.Assignment{CodeMetaDigest: digest, Epoch: 1, Executors: []*clusterv1.ExecutorAssignment{{
			Executor: &clusterv1.Executor{ComponentId: "c", TaskStart: 1, TaskEnd: 1},
			Slot:     &clusterv1.Slot{SupervisorId: "s", Port: 6700},
		}}}
}

// With digest authentication every node the daemons create (the layout,
// the leader's lock node, a registration kept by EphemeralNode.Keep, a
// directory made through the package's EnsurePath, and a topology written
// by the leader through Session.Ops) gives anyone READ only: an anonymous
// client or one with a wrong password can read
// everything and change nothing, while the cluster's identity and the
// super ACL's can.
func TestDigestACLProtectsEveryNode(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	s := connectAs(t, z.Addr(), clusterUser+":"+clusterPassword, nil)
	paths := s.Paths()
	if err := s.EnsureDirs(layout(paths)...); err != nil {
		t.Fatal(err)
	}
	if err := s.EnsurePath(paths.Swarms()); err != nil { // as bittorrent does
		t.Fatal(err)
	}
	self := &clusterv1.NimbusInfo{Host: "127.0.0.1", Port: 6627}
	reg := paths.Nimbus("127.0.0.1:6627")
	run(t, func(ctx context.Context) {
		cluster.EphemeralNode{Path: reg, Data: cluster.Encode(self), RecreateParent: true}.Keep(ctx, s, slog.New(slog.DiscardHandler))
	})
	e := leader.New(leader.Config{Session: s, Self: self, Eligible: func() error { return nil }, Logger: slog.New(slog.DiscardHandler)})
	run(t, func(ctx context.Context) { _ = e.Run(ctx) })
	e.Queue()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	term, err := e.Await(ctx)
	if err != nil {
		t.Fatal(err)
	}
	base, dist, assignment := topology("wordcount")
	const id = "wordcount-1-1"
	ops := s.Ops()
	if _, err := term.Multi(ops.CreateDistribution(id, dist), ops.CreateStorm(id, base), ops.CreateAssignment(id, assignment)); err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, 5*time.Second, "registration", func() error {
		if ok, _, err := s.Conn().Exists(reg); err != nil || !ok {
			return fmt.Errorf("not registered (%v)", err)
		}
		return nil
	})

	nodes := append([]string{paths.Root}, layout(paths)...)
	nodes = append(nodes, paths.Swarms(), reg, term.Node(), paths.Storm(id), paths.Distribution(id), paths.Assignment(id))
	anon := testcluster.ConnectZooKeeper(t, 4*time.Second, z.Addr())
	for _, p := range nodes {
		if err := checkACL(s.Conn(), p); err != nil {
			t.Error(err)
		}
	}

	// Anyone may read; nobody without the credentials may change anything
	// under the root: not create (copy a foreign StormBase in, queue for
	// leadership), not set, not delete, not change an ACL.
	wrong := testcluster.ConnectZooKeeperAs(t, 4*time.Second, clusterUser+":not-the-password", z.Addr())
	for who, conn := range map[string]*zk.Conn{"anonymous": anon, "wrong password": wrong} {
		for _, p := range nodes {
			if _, _, err := conn.Get(p); err != nil {
				t.Errorf("%s: read %s: %v", who, p, err)
			}
			if _, _, err := conn.Children(p); err != nil {
				t.Errorf("%s: list %s: %v", who, p, err)
			}
			for op, err := range map[string]error{
				"create a child": func() error { _, err := conn.Create(p+"/x", []byte("x"), 0, zk.WorldACL(zk.PermAll)); return err }(),
				"create an ephemeral sequential child": func() error {
					_, err := conn.Create(p+"/_c_x-lock-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
					return err
				}(),
				"set":     func() error { _, err := conn.Set(p, []byte("junk"), -1); return err }(),
				"set ACL": func() error { _, err := conn.SetACL(p, zk.WorldACL(zk.PermAll), -1); return err }(),
				"delete":  conn.Delete(p, -1),
			} {
				want := zk.ErrNoAuth
				if p == paths.Root && op == "delete" {
					// Deleting the root is up to "/", which is ZooKeeper's
					// and open; ZooKeeper refuses it while the root has
					// children, and they are ours.
					want = zk.ErrNotEmpty
				}
				if !errors.Is(err, want) {
					t.Errorf("%s: %s on %s: %v, want %v", who, op, p, err, want)
				}
			}
		}
	}

	// The cluster's identity and the admin may write.
	for who, payload := range map[string]string{"cluster": clusterUser + ":" + clusterPassword, "admin": adminUser + ":" + adminPassword} {
		conn := testcluster.ConnectZooKeeperAs(t, 4*time.Second, payload, z.Addr())
		p := paths.Storm("other-" + who)
		if _, err := conn.Create(p, cluster.Encode(base), 0, s.ACL()); err != nil {
			t.Fatalf("%s: create %s: %v", who, p, err)
		}
		if _, err := conn.Set(paths.Assignment(id), cluster.Encode(assignment), -1); err != nil {
			t.Errorf("%s: set: %v", who, err)
		}
		if err := conn.Delete(p, -1); err != nil {
			t.Errorf("%s: delete: %v", who, err)
		}
	}
}

// go-zookeeper sends the credentials again on every new connection: after
// the network was cut and restored (same session), after the session
// expired (a new one), and after the ZooKeeper server restarted. Each
// time the daemon's next write works at once (no NoAuth), and nodes it
// creates again carry the ACL.
func TestDigestAuthSurvivesReconnectionExpiryAndRestart(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	cutter := testcluster.NewCutter()
	s := connectAs(t, z.Addr(), clusterUser+":"+clusterPassword, func(c *cluster.SessionConfig) {
		c.SessionTimeout = 2 * time.Second
		c.Dialer = cutter.Dial
	})
	paths := s.Paths()
	if err := s.EnsureDirs(layout(paths)...); err != nil {
		t.Fatal(err)
	}
	reg := paths.Nimbus("127.0.0.1:6627")
	run(t, func(ctx context.Context) {
		cluster.KeepEphemeral(ctx, s, reg, cluster.Encode(&clusterv1.NimbusInfo{Host: "127.0.0.1", Port: 6627}), slog.New(slog.DiscardHandler), nil)
	})
	anon := testcluster.ConnectZooKeeper(t, 10*time.Second, z.Addr())
	registered := func(sid int64) func() error {
		return func() error {
			_, stat, err := anon.Get(reg)
			if err != nil {
				return err
			}
			if stat.EphemeralOwner != sid {
				return fmt.Errorf("owned by %#x, want %#x", stat.EphemeralOwner, sid)
			}
			return checkACL(s.Conn(), reg)
		}
	}
	established := func(what string) int64 {
		t.Helper()
		var sid int64
		testcluster.WaitFor(t, 20*time.Second, what, func() error {
			state, id, _ := s.State()
			if state != zk.StateHasSession {
				return fmt.Errorf("state %v", state)
			}
			sid = id
			return nil
		})
		return sid
	}
	lost := func() {
		t.Helper()
		testcluster.WaitFor(t, 20*time.Second, "session lost", func() error {
			if state, _, _ := s.State(); state == zk.StateHasSession {
				return errors.New("still connected")
			}
			return nil
		})
	}
	// writes makes, changes and deletes a topology as the leader's
	// writes do, on the first try: a connection without the credentials
	// would answer NoAuth.
	n := 0
	writes := func(when string) {
		t.Helper()
		n++
		id := fmt.Sprintf("t-%d", n)
		base, _, _ := topology("t")
		ops := s.Ops()
		if _, err := s.Conn().Multi(ops.CreateStorm(id, base).Request()); err != nil {
			t.Fatalf("%s: create: %v", when, err)
		}
		if err := checkACL(s.Conn(), paths.Storm(id)); err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		if _, err := s.Conn().Multi(ops.SetStorm(id, base, 0).Request(), ops.DeleteStorm(id).Request()); err != nil {
			t.Fatalf("%s: set and delete: %v", when, err)
		}
	}

	sid := established("session")
	testcluster.WaitFor(t, 5*time.Second, "registered", registered(sid))
	writes("first connection")

	cutter.Cut()
	lost()
	cutter.Restore()
	if again := established("reconnected"); again != sid {
		t.Fatalf("session %#x expired during a short cut (was %#x)", again, sid)
	}
	writes("after a reconnection")

	cutter.Cut()
	testcluster.WaitFor(t, 20*time.Second, "session expired by the server", func() error {
		if ok, _, err := anon.Exists(reg); err != nil || ok {
			return fmt.Errorf("registration still there (%v)", err)
		}
		return nil
	})
	cutter.Restore()
	testcluster.WaitFor(t, 20*time.Second, "a new session", func() error {
		state, id, _ := s.State()
		if state != zk.StateHasSession || id == sid {
			return fmt.Errorf("state %v, session %#x", state, id)
		}
		sid = id
		return nil
	})
	writes("after expiry")
	testcluster.WaitFor(t, 10*time.Second, "registered again, with the ACL", registered(sid))

	z.Stop()
	lost()
	z.Start()
	sid = established("session after the server's restart")
	writes("after the server restarted")
	testcluster.WaitFor(t, 10*time.Second, "registered after the server's restart", registered(sid))
}

// A nimbus given credentials on a root created without ACLs (anyone may
// change it) works on, and says at error level how to migrate: the
// zkCli.sh command with the ACL spelled out, never the password. Running
// that command protects the tree, after which nothing is reported.
func TestEnsureDirsReportsARootCreatedWithoutACLs(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	anon := testcluster.ConnectZooKeeper(t, 4*time.Second, z.Addr())
	for _, p := range []string{"/storm", "/storm/storms", "/storm/storms/old"} {
		if _, err := anon.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	logs := &records{}
	s := connectAs(t, z.Addr(), clusterUser+":"+clusterPassword, func(c *cluster.SessionConfig) {
		c.Logger = slog.New(logs)
	})
	paths := s.Paths()
	if err := s.EnsureDirs(paths.Storms(), paths.Assignments()); err != nil {
		t.Fatal(err)
	}
	const msg = "ZooKeeper nodes created without ACLs: anyone may change them; this daemon works on, but migrate them once every daemon has storm.zookeeper.auth.scheme and .payload"
	if n := logs.count(msg, "", ""); n != 1 {
		t.Fatalf("%d migration messages, want 1", n)
	}
	rec := logs.find(msg)
	var open, migrate string
	rec.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "open":
			open = a.Value.String()
		case "migrate":
			migrate = a.Value.String()
		}
		return true
	})
	if level := rec.Level; level != slog.LevelError {
		t.Errorf("migration message at level %v, want error", level)
	}
	if want := "/storm world:anyone:cdrwa, /storm/storms world:anyone:cdrwa"; open != want {
		t.Errorf("open = %q, want %q (/storm/assignments was created with the ACL)", open, want)
	}
	want := fmt.Sprintf("zkCli.sh -server %s setAcl -R /storm 'digest:%s:cdrwa,digest:%s:cdrwa,world:anyone:r'", z.Addr(), clusterID, adminID)
	if migrate != want || s.MigrateCommand() != want {
		t.Errorf("migrate = %q\nMigrateCommand = %q\nwant %q", migrate, s.MigrateCommand(), want)
	}
	logs.noSecrets(t)

	// It works on: the old nodes are anyone's, this daemon's included.
	if _, err := s.Conn().Set("/storm/storms/old", []byte("x"), -1); err != nil {
		t.Fatal(err)
	}

	// The operator runs the command as printed.
	zkBin := "/usr/share/zookeeper/bin"
	if _, err := os.Stat(zkBin + "/zkCli.sh"); err != nil {
		t.Skipf("zkCli.sh not installed (%v): the printed command is not run", err)
	}
	cmd := exec.CommandContext(t.Context(), "sh", "-c", migrate)
	cmd.Env = append(os.Environ(), "PATH="+zkBin+":"+os.Getenv("PATH"), "ZOO_LOG_DIR="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", migrate, err, out)
	}
	for _, p := range []string{"/storm", "/storm/storms", "/storm/storms/old", "/storm/assignments"} {
		if err := checkACL(s.Conn(), p); err != nil {
			t.Error(err)
		}
	}
	if _, err := anon.Create("/storm/storms/foreign", nil, 0, zk.WorldACL(zk.PermAll)); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("anonymous create after the migration: %v, want NoAuth", err)
	}
	again := &records{}
	s2 := connectAs(t, z.Addr(), clusterUser+":"+clusterPassword, func(c *cluster.SessionConfig) {
		c.Logger = slog.New(again)
	})
	if err := s2.EnsureDirs(paths.Storms(), paths.Assignments()); err != nil {
		t.Fatal(err)
	}
	if n := again.count(msg, "", ""); n != 0 {
		t.Errorf("migration still reported after it was done")
	}
}

// A daemon that cannot write the cluster's nodes (no credentials, another
// password) or whose super ACL ZooKeeper rejects fails at EnsureDirs,
// saying why, instead of failing every write later; a root under a parent
// it may not write is no reason to fail. Settings Connect cannot use are
// refused. No error carries a password.
func TestEnsureDirsRefusesWhatCannotWork(t *testing.T) {
	z := testcluster.StartZooKeeper(t)
	s := connectAs(t, z.Addr(), clusterUser+":"+clusterPassword, nil)
	paths := s.Paths()
	if err := s.EnsureDirs(layout(paths)...); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, payload, want string
		opt                 func(*cluster.SessionConfig)
	}{
		{"no credentials", "", "set storm.zookeeper.auth.scheme: digest and storm.zookeeper.auth.payload", nil},
		{"another password", clusterUser + ":" + adminPassword, `storm.zookeeper.auth.payload (user "nimbus") is not the identity`, nil},
		{"a super ACL of a scheme the server lacks", clusterUser + ":" + clusterPassword, "ZooKeeper does not accept storm.zookeeper.superACL",
			func(c *cluster.SessionConfig) { c.SuperACL = "sasl:admin" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			other := connectAs(t, z.Addr(), c.payload, c.opt)
			err := other.EnsureDirs(layout(paths)...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("EnsureDirs: %v, want an error saying %q", err, c.want)
			}
			if strings.Contains(err.Error(), adminPassword) || strings.Contains(err.Error(), clusterPassword) {
				t.Fatalf("error carries a password: %v", err)
			}
			t.Log(err)
		})
	}

	// A root under a parent the cluster may not create in (an operator's
	// chroot) is fine once it exists: only the root and its directories
	// are the daemons' business.
	admin := testcluster.ConnectZooKeeperAs(t, 4*time.Second, adminUser+":"+adminPassword, z.Addr())
	if _, err := admin.Create("/apps", nil, 0, append(zk.DigestACL(zk.PermAll, adminUser, adminPassword), zk.WorldACL(zk.PermRead)...)); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Create("/apps/storm", nil, 0, wantACL); err != nil {
		t.Fatal(err)
	}
	chrooted := connectAs(t, z.Addr(), clusterUser+":"+clusterPassword, func(c *cluster.SessionConfig) { c.Root = "/apps/storm" })
	if err := chrooted.EnsureDirs(layout(chrooted.Paths())...); err != nil {
		t.Fatalf("EnsureDirs under a locked parent: %v", err)
	}
	if err := checkACL(chrooted.Conn(), chrooted.Paths().Storms()); err != nil {
		t.Error(err)
	}

	for _, c := range []struct{ scheme, payload, super string }{
		{"kerberos", "x:y", ""},
		{cluster.AuthDigest, "only-a-password", ""},
		{cluster.AuthDigest, ":" + clusterPassword, ""},
		{"", clusterPassword, ""},
		{cluster.AuthDigest, clusterUser + ":" + clusterPassword, "no-id"},
	} {
		_, err := cluster.Connect(t.Context(), cluster.SessionConfig{Servers: []string{z.Addr()}, SessionTimeout: 4 * time.Second,
			Root: "/storm", AuthScheme: c.scheme, AuthPayload: c.payload, SuperACL: c.super})
		if !errors.Is(err, cluster.ErrAuthConfig) {
			t.Errorf("%+v: %v, want ErrAuthConfig", c, err)
		}
		if err != nil && (strings.Contains(err.Error(), clusterPassword) || strings.Contains(err.Error(), "only-a-password")) {
			t.Errorf("error carries the payload: %v", err)
		}
	}
}

// noSecrets fails the test if a record carries a password.
func (r *records) noSecrets(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rec := range r.recs {
		text := rec.Message
		rec.Attrs(func(a slog.Attr) bool { text += " " + a.Value.String(); return true })
		if strings.Contains(text, clusterPassword) || strings.Contains(text, adminPassword) {
			t.Errorf("a log record carries a password: %s", text)
		}
	}
}

// find returns the last record with message msg.
func (r *records) find(msg string) slog.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rec := range slices.Backward(r.recs) {
		if rec.Message == msg {
			return rec
		}
	}
	return slog.Record{}
}
