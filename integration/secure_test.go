package integration

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nimbusha/nimbus/certs"
	"github.com/nimbusha/nimbus/client"
	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// Security end to end: real TLS (a throwaway CA, a certificate per daemon
// and per user), real ZooKeeper with digest ACLs, the daemons as processes.
// The principals: admin (nimbus.admins), alice, bob and mallory (in
// nimbus.users), trudy (in no list).

// secureCluster is the cluster TestSecureCluster's subtests share: two
// nimbuses, one supervisor with three slots and pprof on, security on.
type secureCluster struct {
	sec      *testcluster.Security
	z        *testcluster.ZooKeeper
	c        *testcluster.Cluster
	nimbuses []*testcluster.Process
	leader   *testcluster.Process
	follower *testcluster.Process
	sup      *testcluster.Process
	zk       *zk.Conn // anonymous: reads are open to anyone
	dir      string   // client configs, artifacts
}

func TestSecureCluster(t *testing.T) {
	sec := testcluster.NewSecurity(t)
	z := testcluster.StartZooKeeper(t)
	c := testcluster.New(t, z.Addr(), testcluster.WithSecurity(sec))
	ps := c.StartNimbuses(t, 2, testcluster.WithArgs(
		"--nimbus.monitor.freq.secs", "1",
		"--topology.min.replication.count", "2",
		"--nimbus.users", "alice,bob,mallory"))
	_, leader := c.WaitLeader(t, ps, 15*time.Second)
	sup, err := c.StartSupervisor(testcluster.WithSlots(testcluster.FreePorts(t, 3)...),
		testcluster.WithArgs("--storm.metrics.pprof.enable"))
	if err != nil {
		t.Fatal(err)
	}
	s := &secureCluster{sec: sec, z: z, c: c, nimbuses: ps, leader: leader, follower: testcluster.Without(ps, leader)[0],
		sup: sup, zk: testcluster.ConnectZooKeeper(t, 5*time.Second, z.Addr()), dir: t.TempDir()}

	t.Run("TLS refusals", s.tlsRefusals)
	t.Run("authorization", s.authorization)
	t.Run("ZooKeeper ACLs", s.zooKeeperACLs)
	t.Run("metrics over TLS", s.metrics)
	t.Run("certificate rotation", s.rotation)
	t.Run("REST API over HTTPS", s.restAPI)
	t.Run("supervisor code port", s.supervisorCodePort)
	t.Run("blob ACLs", s.blobACLs)
	t.Run("submit, run, fail over, kill", s.lifecycle) // last: kills the leader
}

// tlsRefusals: a certificate another CA signed, and a client without TLS,
// are refused at the handshake, over gRPC and through stormctl, which
// exits 1 with one line.
func (s *secureCluster) tlsRefusals(t *testing.T) {
	foreign := s.sec.Foreign(t, "admin")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, err := s.c.APIAs(s.leader, foreign).GetLeader(ctx, &nimbusv1.GetLeaderRequest{})
	if status.Code(err) != codes.Unavailable {
		t.Errorf("GetLeader with another CA's certificate: %v, want refused at the handshake (Unavailable)", err)
	}
	// With TLS 1.3 the server judges the client's certificate after the
	// client's side of the handshake: the client reads the server's alert
	// ("unknown certificate authority") or, as often, a reset connection.
	_, errOut, code := stormctl(t, "--config", s.clientConfig(t, foreign), "leader")
	if code != 8 || !oneLine(errOut) || !strings.Contains(errOut, s.leader.Addr()) {
		t.Errorf("stormctl with another CA's certificate: exit %d, stderr %q; want 8 and one line naming the nimbuses", code, errOut)
	}
	// The nimbuses say why, with the client's address.
	refusal := map[string]string{"reason": fmt.Sprintf("the client's certificate (CN=admin, issued by CN=%s) is not signed by a CA in %s",
		testcluster.ForeignCAName, s.sec.CAFile)}
	for _, p := range s.nimbuses {
		waitLogged(t, p, "refused a TLS client", refusal)
	}
	_, errOut, code = stormctl(t, "--seeds", s.leader.Addr(), "leader") // no TLS at all
	if code != 8 || !oneLine(errOut) || !strings.Contains(errOut, s.leader.Addr()) {
		t.Errorf("stormctl without TLS: exit %d, stderr %q; want 8 and one line naming the nimbus", code, errOut)
	}
	// A TLS client configured without a certificate is told what is missing.
	_, errOut, code = stormctl(t, "--config", s.clientConfig(t, s.sec.Anonymous()), "leader")
	if code == 0 || !strings.HasPrefix(errOut, "stormctl: ") || !strings.Contains(errOut, "nimbus.grpc.tls.cert.path") {
		t.Errorf("stormctl with TLS but no certificate: exit %d, stderr %q; want a failure naming nimbus.grpc.tls.cert.path", code, errOut)
	}
}

// authorization: who may act on a topology is its owner, its
// topology.users and the admins; the owner is the caller's principal,
// whatever the spec says; nimbus.users limits who may submit; a refusal is
// PermissionDenied naming the principal and changes nothing; every
// mutating request leaves one audit line in the leader's log.
func (s *secureCluster) authorization(t *testing.T) {
	alice, bob, mallory := s.sec.Client(t, "alice"), s.sec.Client(t, "bob"), s.sec.Client(t, "mallory")
	trudy, admin := s.sec.Client(t, "trudy"), s.sec.Admin
	if _, p, err := s.c.AgreedLeader(s.nimbuses); err != nil || p != s.leader {
		t.Fatalf("the leader changed since the cluster started (%v): the audit lines below are the leader's", err)
	}
	leaderAudits, followerAudits := len(audits(t, s.leader)), len(audits(t, s.follower))
	ctx := t.Context()

	spec := sleepSpec("alicejob", 1)
	spec.Owner = "alice"
	spec.Config = map[string]string{"topology.users": "bob", "db.password": "hunter2-conf-secret"}
	resp, err := sdkClient(t, alice, s.nimbuses...).SubmitTopology(ctx, spec, strings.NewReader("code"), 4, nil)
	if err != nil {
		t.Fatalf("alice submits: %v", err)
	}
	id := resp.GetTopologyId()
	before, version := stormBase(t, s.zk, id)
	if before.GetOwner() != "alice" {
		t.Fatalf("alicejob is owned by %q", before.GetOwner())
	}

	// mallory: every action on alice's topology refused, naming her and
	// the action, over gRPC and through stormctl.
	api := s.c.APIAs(s.leader, mallory)
	two, zero := int32(2), int32(0)
	for _, a := range []struct {
		action string
		call   func() error
	}{
		{"kill", func() error {
			_, err := api.KillTopology(ctx, &nimbusv1.KillTopologyRequest{Name: "alicejob", WaitSecs: &zero})
			return err
		}},
		{"activate", func() error {
			_, err := api.ActivateTopology(ctx, &nimbusv1.ActivateTopologyRequest{Name: "alicejob"})
			return err
		}},
		{"deactivate", func() error {
			_, err := api.DeactivateTopology(ctx, &nimbusv1.DeactivateTopologyRequest{Name: "alicejob"})
			return err
		}},
		{"rebalance", func() error {
			_, err := api.RebalanceTopology(ctx, &nimbusv1.RebalanceTopologyRequest{Name: "alicejob", NumWorkers: &two, WaitSecs: &zero})
			return err
		}},
	} {
		err := a.call()
		if status.Code(err) != codes.PermissionDenied || !strings.Contains(status.Convert(err).Message(), "mallory may not "+a.action) {
			t.Errorf("mallory %s alicejob: %v, want PermissionDenied naming mallory and %s", a.action, err, a.action)
		}
	}
	malloryConf := s.clientConfig(t, mallory)
	for _, args := range [][]string{{"kill", "alicejob", "--wait", "0"}, {"rebalance", "alicejob", "--workers", "2"}} {
		_, errOut, code := stormctl(t, append([]string{"--config", malloryConf}, args...)...)
		if code != 7 || !oneLine(errOut) || strings.Contains(errOut, "PermissionDenied") || !strings.Contains(errOut, "mallory may not "+args[0]) {
			t.Errorf("stormctl %v as mallory: exit %d, stderr %q; want 7 (denied) in plain words", args, code, errOut)
		}
	}
	// Nor may she read its code (spec.pb holds its conf), from either nimbus.
	for _, p := range s.nimbuses {
		code := s.c.CodeAs(p, mallory)
		if _, err := code.GetCodeMeta(ctx, &nimbusv1.GetCodeMetaRequest{TopologyId: id}); status.Code(err) != codes.PermissionDenied {
			t.Errorf("%s: mallory's GetCodeMeta: %v, want PermissionDenied", p.Name, err)
		}
		got, err := downloadAll(ctx, code, id, "spec.pb")
		if status.Code(err) != codes.PermissionDenied || len(got) != 0 {
			t.Errorf("%s: mallory's DownloadCode(spec.pb): %d bytes, %v; want none, PermissionDenied", p.Name, len(got), err)
		}
	}
	after, v := stormBase(t, s.zk, id)
	if v != version || after.GetStatus() != clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE || after.GetNumWorkers() != 1 {
		t.Errorf("refusals changed alicejob: version %d -> %d, %v", version, v, after)
	}

	// bob, in its topology.users, may act on it; alice may read its code.
	bobAPI := s.c.APIAs(s.leader, bob)
	if _, err := bobAPI.DeactivateTopology(ctx, &nimbusv1.DeactivateTopologyRequest{Name: "alicejob"}); err != nil {
		t.Errorf("bob deactivates alicejob: %v", err)
	}
	if _, err := bobAPI.ActivateTopology(ctx, &nimbusv1.ActivateTopologyRequest{Name: "alicejob"}); err != nil {
		t.Errorf("bob activates alicejob: %v", err)
	}
	if got, err := downloadAll(ctx, s.c.CodeAs(s.follower, alice), id, "spec.pb"); err != nil || len(got) == 0 {
		t.Errorf("alice downloads her spec.pb: %d bytes, %v", len(got), err)
	}

	// mallory's submission claiming alice as its owner is mallory's.
	artifact := filepath.Join(s.dir, "sleeper.bin")
	if err := os.WriteFile(artifact, []byte("code"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := stormctl(t, "--config", malloryConf, "submit", "fakealice", artifact, "--owner", "alice",
		"--component", "spout=1", "--worker-command", "/bin/sleep 3600", "-o", "json")
	var submitted struct {
		TopologyID string `json:"topologyId"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &submitted) != nil || submitted.TopologyID == "" {
		t.Fatalf("stormctl submit as mallory: exit %d\n%s%s", code, out, errOut)
	}
	if base, _ := stormBase(t, s.zk, submitted.TopologyID); base.GetOwner() != "mallory" {
		t.Errorf("fakealice, submitted by mallory as alice's, is owned by %q", base.GetOwner())
	}
	if _, err := s.c.APIAs(s.leader, alice).KillTopology(ctx, &nimbusv1.KillTopologyRequest{Name: "fakealice", WaitSecs: &zero}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("alice kills fakealice, which claims her as owner: %v, want PermissionDenied", err)
	}

	// trudy is not in nimbus.users.
	_, err = sdkClient(t, trudy, s.nimbuses...).SubmitTopology(ctx, sleepSpec("trudyjob", 1), strings.NewReader("code"), 4, nil)
	if status.Code(err) != codes.PermissionDenied || !strings.Contains(status.Convert(err).Message(), "trudy may not submit") {
		t.Errorf("trudy submits: %v, want PermissionDenied naming trudy", err)
	}

	// Only admins may hand leadership over.
	_, err = s.c.APIAs(s.leader, mallory).HandOver(ctx, &nimbusv1.HandOverRequest{To: s.follower.Addr()})
	if status.Code(err) != codes.PermissionDenied || !strings.Contains(status.Convert(err).Message(), "mallory may not hand leadership over") {
		t.Errorf("mallory hands leadership over: %v, want PermissionDenied naming her", err)
	}

	// The owner and an admin may kill.
	if err := sdkClient(t, alice, s.nimbuses...).KillTopology(ctx, &nimbusv1.KillTopologyRequest{Name: "alicejob", WaitSecs: &zero}); err != nil {
		t.Errorf("alice kills alicejob: %v", err)
	}
	if _, err := s.c.APIAs(s.leader, admin).KillTopology(ctx, &nimbusv1.KillTopologyRequest{Name: "fakealice", WaitSecs: &zero}); err != nil {
		t.Errorf("admin kills fakealice: %v", err)
	}
	testcluster.WaitFor(t, 20*time.Second, "alicejob, fakealice and trudyjob gone", func() error {
		names, err := topologyNames(ctx, s.c, s.leader)
		if err == nil && len(names) != 0 {
			err = fmt.Errorf("still listed: %v", names)
		}
		return err
	})

	// One audit line per mutating request, on the leader alone.
	want := []string{
		"alice submit alicejob ok",
		"mallory kill alicejob PermissionDenied", "mallory activate alicejob PermissionDenied",
		"mallory deactivate alicejob PermissionDenied", "mallory rebalance alicejob PermissionDenied",
		"mallory kill alicejob PermissionDenied", "mallory rebalance alicejob PermissionDenied", // stormctl
		"bob deactivate alicejob ok", "bob activate alicejob ok",
		"mallory submit fakealice ok", "alice kill fakealice PermissionDenied",
		"trudy submit - PermissionDenied", // refused before the stream's spec was read
		"mallory handover " + s.follower.Addr() + " PermissionDenied",
		"alice kill alicejob ok", "admin kill fakealice ok",
	}
	var got []string
	testcluster.WaitFor(t, 10*time.Second, fmt.Sprintf("%d audit lines in the leader's log", len(want)), func() error {
		got = audits(t, s.leader)[leaderAudits:]
		if len(got) < len(want) {
			return fmt.Errorf("%d audit lines", len(got))
		}
		return nil
	})
	if !slices.Equal(got, want) {
		t.Errorf("the leader's audit lines (principal action target outcome):\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := len(audits(t, s.follower)); n != followerAudits {
		t.Errorf("the follower wrote %d audit lines", n-followerAudits)
	}
	for _, p := range s.nimbuses {
		if strings.Contains(logText(t, p), "hunter2-conf-secret") {
			t.Errorf("%s logged alicejob's conf value", p.Name)
		}
	}
}

// zooKeeperACLs: an anonymous ZooKeeper client cannot create, set or
// delete anything under the secure root, so copying a topology of another
// root (its StormBase, its distribution node, a replica) into it fails,
// and no nimbus fetches its code and no worker of it starts.
func (s *secureCluster) zooKeeperACLs(t *testing.T) {
	alice := s.sec.Client(t, "alice")
	cl := sdkClient(t, alice, s.nimbuses...)
	mine := submitSleeper(t, cl, "acljob", 1).GetTopologyId()
	sleepers(t, s.zk, mine, 1, 30*time.Second, s.sup)

	// Another cluster, without ACLs, on /other: the attacker's topology.
	other := testcluster.New(t, s.z.Addr(), testcluster.WithRoot("/other"))
	ops := other.StartNimbuses(t, 1)
	other.WaitLeader(t, ops, 15*time.Second)
	pwn := submitSleeper(t, newClient(t, other, ops...), "pwn", 1).GetTopologyId()
	replicas := zkChildren(t, s.zk, "/other/code-distributor/"+pwn)
	if len(replicas) != 1 {
		t.Fatalf("pwn's replicas on /other: %v", replicas)
	}
	stormData := zkGet(t, s.zk, "/other/storms/"+pwn)
	distData := zkGet(t, s.zk, "/other/code-distributor/"+pwn)
	replicaData := zkGet(t, s.zk, "/other/code-distributor/"+pwn+"/"+replicas[0])

	// The root's ACL: the cluster's identity, and anyone may read.
	acl, _, err := s.zk.GetACL("/storm")
	if err != nil {
		t.Fatal(err)
	}
	digest := false
	for _, e := range acl {
		if e.Scheme == "world" && e.Perms != zk.PermRead {
			t.Errorf("/storm gives anyone %d, want read only (%v)", e.Perms, acl)
		}
		digest = digest || (e.Scheme == "digest" && e.Perms == zk.PermAll)
	}
	if !digest {
		t.Errorf("/storm's ACL %v gives no digest identity every permission", acl)
	}
	anon := s.zk
	worldACL := zk.WorldACL(zk.PermAll)
	for what, op := range map[string]func() error{
		"create storms/<pwn>": func() error {
			_, err := anon.Create("/storm/storms/"+pwn, stormData, 0, worldACL)
			return err
		},
		"create code-distributor/<pwn>": func() error {
			_, err := anon.Create("/storm/code-distributor/"+pwn, distData, 0, worldACL)
			return err
		},
		"create a replica of acljob at the other root's nimbus": func() error {
			_, err := anon.Create("/storm/code-distributor/"+mine+"/"+replicas[0], replicaData, 0, worldACL)
			return err
		},
		"create a node under the root": func() error {
			_, err := anon.Create("/storm/pwn", nil, 0, worldACL)
			return err
		},
		"set storms/<acljob> to pwn's StormBase": func() error {
			_, err := anon.Set("/storm/storms/"+mine, stormData, -1)
			return err
		},
		"set assignments/<acljob>": func() error {
			_, err := anon.Set("/storm/assignments/"+mine, nil, -1)
			return err
		},
		"delete assignments/<acljob>":     func() error { return anon.Delete("/storm/assignments/"+mine, -1) },
		"delete the supervisor's node":    func() error { return anon.Delete("/storm/supervisors/"+s.sup.ID(), -1) },
		"delete the leader's nimbus node": func() error { return anon.Delete("/storm/nimbuses/"+s.leader.Addr(), -1) },
		"open the root's ACL": func() error {
			_, err := anon.SetACL("/storm", worldACL, -1)
			return err
		},
	} {
		if err := op(); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("an anonymous client may %s: %v, want NoAuth", what, err)
		}
	}

	// A topology submitted after the attempts runs: the supervisor has
	// reconciled since, and the leader scheduled. Nothing of pwn anywhere.
	barrier := submitSleeper(t, cl, "aclbarrier", 1).GetTopologyId()
	sleepers(t, s.zk, barrier, 1, 30*time.Second, s.sup)
	for _, p := range []string{"/storm/storms/" + pwn, "/storm/code-distributor/" + pwn, "/storm/assignments/" + pwn,
		"/storm/code-distributor/" + mine + "/" + replicas[0]} {
		if ok, _, err := s.zk.Exists(p); err != nil || ok {
			t.Errorf("%s exists (%v)", p, err)
		}
	}
	info, err := supervisorInfo(t, s.zk, s.sup.ID())
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range info.GetWorkers() {
		if w.GetTopologyId() == pwn {
			t.Errorf("the supervisor has a worker of pwn: %v", w)
		}
	}
	if pids := processesOf(pwn); len(pids) != 0 {
		t.Errorf("processes %v run for pwn", pids)
	}
	for _, p := range s.nimbuses {
		if err := holdsNothing(p, pwn); err != nil {
			t.Error(err)
		}
	}
	if _, err := os.Stat(filepath.Join(s.sup.LocalDir, "supervisor", "code", pwn)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the supervisor holds pwn's code (%v)", err)
	}
	if base, _ := stormBase(t, s.zk, mine); base.GetName() != "acljob" || base.GetOwner() != "alice" {
		t.Errorf("acljob's StormBase: %v", base)
	}

	zero := int32(0)
	for _, name := range []string{"acljob", "aclbarrier"} {
		if err := cl.KillTopology(t.Context(), &nimbusv1.KillTopologyRequest{Name: name, WaitSecs: &zero}); err != nil {
			t.Errorf("kill %s: %v", name, err)
		}
	}
}

// metrics: with TLS on, the metrics port speaks HTTPS only, and serves
// pprof only with storm.metrics.pprof.enable (the supervisor's here).
func (s *secureCluster) metrics(t *testing.T) {
	for _, p := range []*testcluster.Process{s.leader, s.sup} {
		page, err := p.Metrics() // HTTPS, trusting the CA
		if err != nil || !strings.Contains(page, "go_goroutines") {
			t.Errorf("%s: metrics over HTTPS: %v\n%.200s", p.Name, err, page)
		}
		if code, body, err := httpGet("http://"+p.MetricsAddr()+"/metrics", nil); err == nil && (code == http.StatusOK || strings.Contains(body, "go_goroutines")) {
			t.Errorf("%s: metrics over plain HTTP: %d\n%.200s", p.Name, code, body)
		}
		if _, _, err := httpGet("https://"+p.MetricsAddr()+"/metrics", &tls.Config{ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}); err == nil {
			t.Errorf("%s: a client that does not trust the CA read the metrics", p.Name)
		}
	}
	trusting := s.sec.MetricsTLS()
	for p, want := range map[*testcluster.Process]int{s.leader: http.StatusNotFound, s.follower: http.StatusNotFound, s.sup: http.StatusOK} {
		if code, _, err := httpGet("https://"+p.MetricsAddr()+"/debug/pprof/", trusting); err != nil || code != want {
			t.Errorf("%s: /debug/pprof/: %d, %v; want %d", p.Name, code, err, want)
		}
	}
}

// rotation: a nimbus's certificate re-issued into the same files is served
// to the next connection, without a restart, and the nimbus logs the new
// expiry.
func (s *secureCluster) rotation(t *testing.T) {
	p := s.follower
	cfg, err := s.sec.Client(t, "alice").TLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.NextProtos = []string{"h2"} // gRPC's
	served := func() (*tls.ConnectionState, error) {
		d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 2 * time.Second}, Config: cfg}
		conn, err := d.DialContext(t.Context(), "tcp", p.Addr())
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		st := conn.(*tls.Conn).ConnectionState()
		return &st, nil
	}
	st, err := served()
	if err != nil {
		t.Fatal(err)
	}
	old := st.PeerCertificates[0]

	leaf, err := s.sec.Reissue(p.Identity, 6*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !leaf.NotAfter.Before(old.NotAfter) {
		t.Fatalf("the new certificate expires %v, the old %v: want a new expiry", leaf.NotAfter, old.NotAfter)
	}
	testcluster.WaitFor(t, 10*time.Second, p.Name+" to serve the new certificate", func() error {
		st, err := served()
		if err != nil {
			return err
		}
		if got := st.PeerCertificates[0]; got.SerialNumber.Cmp(leaf.SerialNumber) != 0 || !got.NotAfter.Equal(leaf.NotAfter) {
			return fmt.Errorf("serves serial %x expiring %v", got.SerialNumber, got.NotAfter)
		}
		return nil
	})
	waitLogged(t, p, "reloaded TLS material", map[string]string{
		"subject": "CN=" + testcluster.NimbusPrincipal, "not_after": leaf.NotAfter.UTC().Format("2006-01-02 15:04:05 MST"),
	})
	if !p.Running() {
		t.Fatalf("%s exited", p.Name)
	}
}

// lifecycle: the cluster works with security on. stormctl (--config) and
// the SDK (certs.Reloader.ClientCredentials) submit; the code replicates
// over TLS to the other nimbus (whose certificate was rotated: it fetches
// with the new one), the supervisor fetches it over TLS and runs the
// workers; the leader is SIGKILLed, the other nimbus leads with both
// topologies and their workers untouched; kill removes them.
func (s *secureCluster) lifecycle(t *testing.T) {
	alice := s.sec.Client(t, "alice")
	bin := testcluster.Bin(t).Path("wordcount")
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	conf := s.clientConfig(t, alice)
	out, errOut, code := stormctl(t, "--config", conf, "--timeout", "60s", "submit", "ctljob", bin,
		"--component", "sentence=1", "--component", "split=1", "--component", "count=1",
		"--worker-command", "{code_dir}/artifact --port {port}", "-o", "json")
	var submitted struct {
		TopologyID       string `json:"topologyId"`
		ReplicationCount int    `json:"replicationCount"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &submitted) != nil || submitted.ReplicationCount != 2 {
		t.Fatalf("stormctl submit: exit %d\n%s%s", code, out, errOut)
	}
	cl := sdkClient(t, alice, s.nimbuses...)
	ids := []string{submitted.TopologyID, submitExample(t, cl, "sdkjob", 1)}
	workers := map[string]map[int32]int32{}
	for _, id := range ids {
		for _, p := range s.nimbuses {
			if err := holds(p, id, data); err != nil {
				t.Errorf("replication: %v", err)
			}
		}
		workers[id] = waitWorkers(t, s.zk, id, 1, 30*time.Second, s.sup)
	}

	if err := s.leader.Stop(syscall.SIGKILL, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	_, leader := s.c.WaitLeader(t, []*testcluster.Process{s.follower}, 30*time.Second)
	for i, name := range []string{"ctljob", "sdkjob"} {
		info, err := cl.GetTopologyInfo(t.Context(), name)
		if err != nil || info.GetTopology().GetStatus() != clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE || info.GetTopology().GetOwner() != "alice" {
			t.Errorf("%s after failover to %s: %v, %v", name, leader.Name, info.GetTopology(), err)
		}
		if now, err := runningWorkers(t, s.zk, ids[i], s.sup); err != nil || !maps.Equal(now, workers[ids[i]]) {
			t.Errorf("%s's workers after failover: %v (%v), were %v", name, now, err, workers[ids[i]])
		}
	}

	if _, errOut, code := stormctl(t, "--config", conf, "kill", "ctljob", "--wait", "0"); code != 0 {
		t.Errorf("stormctl kill ctljob: exit %d, %s", code, errOut)
	}
	zero := int32(0)
	if err := cl.KillTopology(t.Context(), &nimbusv1.KillTopologyRequest{Name: "sdkjob", WaitSecs: &zero}); err != nil {
		t.Errorf("kill sdkjob: %v", err)
	}
	testcluster.WaitFor(t, 30*time.Second, "both topologies, their workers and code gone", func() error {
		names, err := topologyNames(t.Context(), s.c, leader)
		if err != nil || len(names) != 0 {
			return fmt.Errorf("listed: %v (%v)", names, err)
		}
		for id, ws := range workers {
			for port, pid := range ws {
				if syscall.Kill(int(pid), 0) == nil {
					return fmt.Errorf("worker %d of %s on port %d still runs", pid, id, port)
				}
			}
			if err := holdsNothing(leader, id); err != nil {
				return err
			}
		}
		if entries, err := os.ReadDir(filepath.Join(s.sup.LocalDir, "supervisor", "code")); err != nil || len(entries) != 0 {
			return fmt.Errorf("the supervisor holds code: %d entries (%v)", len(entries), err)
		}
		return nil
	})
}

// sdkClient is a Go SDK client of ps that speaks TLS as id, with the
// credentials the daemons and stormctl use.
func sdkClient(t *testing.T, id testcluster.Identity, ps ...*testcluster.Process) *client.Client {
	t.Helper()
	r, err := certs.Load(certs.Files{Cert: id.Cert, Key: id.Key, Truststore: id.Truststore}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(testcluster.Addrs(ps...), client.WithDialOptions(grpc.WithTransportCredentials(r.ClientCredentials())))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// clientConfig writes a storm.yaml for stormctl as id, seeded with every
// nimbus, and returns its path.
func (s *secureCluster) clientConfig(t *testing.T, id testcluster.Identity) string {
	t.Helper()
	path, err := id.WriteConfig(s.dir, testcluster.Addrs(s.nimbuses...))
	if err != nil {
		t.Fatal(err)
	}
	return path
}

func oneLine(s string) bool {
	return strings.HasPrefix(s, "stormctl: ") && strings.Count(strings.TrimSpace(s), "\n") == 0
}

// audits lists the audit lines in p's log, in order, as "principal action
// target outcome" (target "-" when the line has none).
func audits(t *testing.T, p *testcluster.Process) []string {
	t.Helper()
	f, err := os.Open(p.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		if !bytes.Contains(sc.Bytes(), []byte(`"msg":"audit"`)) {
			continue
		}
		var l struct{ Principal, Action, Target, Outcome string }
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%s: audit line %s: %v", p.Name, sc.Bytes(), err)
		}
		if l.Target == "" {
			l.Target = "-"
		}
		out = append(out, strings.Join([]string{l.Principal, l.Action, l.Target, l.Outcome}, " "))
	}
	return out
}

func logText(t *testing.T, p *testcluster.Process) string {
	t.Helper()
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// stormBase reads a topology's StormBase and its node's version.
func stormBase(t *testing.T, conn *zk.Conn, id string) (*clusterv1.StormBase, int32) {
	t.Helper()
	data, stat, err := conn.Get("/storm/storms/" + id)
	if err != nil {
		t.Fatalf("StormBase of %s: %v", id, err)
	}
	base := new(clusterv1.StormBase)
	if err := cluster.Decode(id, data, base); err != nil {
		t.Fatal(err)
	}
	return base, stat.Version
}

func zkGet(t *testing.T, conn *zk.Conn, path string) []byte {
	t.Helper()
	data, _, err := conn.Get(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return data
}

// downloadAll downloads one file of a topology's code, returning what
// arrived before the stream ended and how it ended (nil at EOF).
func downloadAll(ctx context.Context, code nimbusv1.CodeServiceClient, id, file string) ([]byte, error) {
	stream, err := code.DownloadCode(ctx, &nimbusv1.DownloadCodeRequest{TopologyId: id, File: file})
	if err != nil {
		return nil, err
	}
	var got []byte
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return got, nil
		}
		if err != nil {
			return got, err
		}
		got = append(got, resp.GetChunk()...)
	}
}

// topologyNames lists the topologies p reports.
func topologyNames(ctx context.Context, c *testcluster.Cluster, p *testcluster.Process) ([]string, error) {
	resp, err := c.API(p).GetClusterInfo(ctx, &nimbusv1.GetClusterInfoRequest{})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, tp := range resp.GetCluster().GetTopologies() {
		names = append(names, tp.GetName())
	}
	return names, nil
}

// httpGet GETs url (with cfg for HTTPS) within 5 s and returns the status
// and body.
func httpGet(url string, cfg *tls.Config) (int, string, error) {
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}
