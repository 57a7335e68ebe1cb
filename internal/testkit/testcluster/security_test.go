package testcluster

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/nimbusha/nimbus/configs"
)

// The flags and environment a secure Cluster gives its daemons are ones
// the daemons take (configs.NimbusFlagKeys, SupervisorFlagKeys), and make
// a secure configuration: TLS with the daemon's own certificate, ZooKeeper
// digest authentication with the password kept off the command line, and
// on a nimbus client authentication and the admin, supervisor and daemon
// lists.
func TestSecureArgsConfigureTheDaemons(t *testing.T) {
	sec := NewSecurity(t)
	for _, tc := range []struct {
		kind, principal string
		keys            []string
	}{
		{"nimbus", NimbusPrincipal, configs.NimbusFlagKeys()},
		{"supervisor", SupervisorPrincipal, configs.SupervisorFlagKeys()},
	} {
		id, err := sec.daemon(t.TempDir(), tc.principal)
		if err != nil {
			t.Fatal(err)
		}
		args, env := sec.secureArgs(tc.kind, id)
		fs := pflag.NewFlagSet(tc.kind, pflag.ContinueOnError)
		configs.RegisterFlags(fs, tc.keys...)
		if err := fs.Parse(args); err != nil {
			t.Fatalf("%s: %v", tc.kind, err)
		}
		if len(env) != 1 {
			t.Fatalf("%s: env %q, want the ZooKeeper payload alone", tc.kind, env)
		}
		name, value, _ := strings.Cut(env[0], "=")
		t.Setenv(name, value)
		cfg, _, err := configs.Load(fs)
		if err != nil {
			t.Fatalf("%s: %v", tc.kind, err)
		}
		if !cfg.TLSEnable || cfg.TLSCert != id.Cert || cfg.TLSKey != id.Key || cfg.TLSTruststore != sec.CAFile {
			t.Errorf("%s: TLS %v %q %q %q", tc.kind, cfg.TLSEnable, cfg.TLSCert, cfg.TLSKey, cfg.TLSTruststore)
		}
		if cfg.ZKAuthScheme != configs.ZKAuthDigest || cfg.ZKAuthPayload != sec.ZooKeeperAuth {
			t.Errorf("%s: ZooKeeper auth %q, payload set %v", tc.kind, cfg.ZKAuthScheme, cfg.ZKAuthPayload != "")
		}
		if slices.Contains(args, sec.ZooKeeperAuth) {
			t.Errorf("%s: the ZooKeeper password is on the command line", tc.kind)
		}
		if tc.kind == "nimbus" {
			if !cfg.SecureGRPC() || !slices.Equal(cfg.NimbusAdmins, []string{AdminPrincipal}) ||
				!slices.Equal(cfg.NimbusSupervisorUsers, []string{SupervisorPrincipal}) ||
				!slices.Equal(cfg.NimbusDaemonUsers, []string{NimbusPrincipal}) || len(cfg.NimbusUsers) != 0 {
				t.Errorf("nimbus: secure %v, admins %v, supervisor users %v, daemon users %v, users %v", cfg.SecureGRPC(),
					cfg.NimbusAdmins, cfg.NimbusSupervisorUsers, cfg.NimbusDaemonUsers, cfg.NimbusUsers)
			}
		}
	}
}

// A client certificate of this CA passes a server that requires one, with
// its principal as common name; the daemons' are for 127.0.0.1; another
// CA's is refused; no key is readable by others.
func TestSecurityCertificates(t *testing.T) {
	sec := NewSecurity(t)
	daemon, err := sec.daemon(t.TempDir(), NimbusPrincipal)
	if err != nil {
		t.Fatal(err)
	}
	again, err := sec.daemon(filepath.Dir(daemon.Cert), NimbusPrincipal)
	if err != nil || again != daemon {
		t.Fatalf("a daemon's certificate made again: %v, %v", again, err)
	}
	if sec.Client(t, "alice") != sec.Client(t, "alice") {
		t.Error("alice's certificate made twice")
	}
	for _, id := range []Identity{daemon, sec.Admin, sec.Client(t, "alice"), sec.Foreign(t, "alice")} {
		st, err := os.Stat(id.Key)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s's key: %v, %v; want mode 0600", id.Principal, st, err)
		}
	}

	pair, err := tls.LoadX509KeyPair(daemon.Cert, daemon.Key)
	if err != nil {
		t.Fatal(err)
	}
	serverCfg := &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequireAndVerifyClientCert,
		ClientCAs: sec.RootCAs(), MinVersion: tls.VersionTLS12}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", serverCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	seen := make(chan string, 4)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			tc := conn.(*tls.Conn)
			if tc.Handshake() == nil {
				seen <- tc.ConnectionState().PeerCertificates[0].Subject.CommonName
			} else {
				seen <- ""
			}
			conn.Close()
		}
	}()
	dial := func(id Identity) error {
		cfg, err := id.TLSConfig()
		if err != nil {
			return err
		}
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", ln.Addr().String(), cfg)
		if err != nil {
			return err
		}
		defer conn.Close()
		// TLS 1.3: the server's verdict on the client comes after the
		// client's handshake; the server answers by closing.
		_, err = conn.Read(make([]byte, 1))
		return err
	}
	for _, tc := range []struct {
		id   Identity
		want string
	}{
		{sec.Client(t, "alice"), "alice"},
		{sec.Admin, AdminPrincipal},
		{sec.Foreign(t, "alice"), ""},
		{sec.Anonymous(), ""},
	} {
		err := dial(tc.id)
		if got := <-seen; got != tc.want {
			t.Errorf("%q (%v): the server saw %q, want %q", tc.id.Principal, err, got, tc.want)
		}
	}

	// Reissue: a new pair in the same files, for the same principal.
	before, err := tls.LoadX509KeyPair(daemon.Cert, daemon.Key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := sec.Reissue(daemon, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	after, err := tls.LoadX509KeyPair(daemon.Cert, daemon.Key)
	if err != nil {
		t.Fatalf("the reissued pair: %v", err)
	}
	if after.Leaf.SerialNumber.Cmp(leaf.SerialNumber) != 0 || after.Leaf.SerialNumber.Cmp(before.Leaf.SerialNumber) == 0 ||
		after.Leaf.Subject.CommonName != NimbusPrincipal || !after.Leaf.NotAfter.Before(before.Leaf.NotAfter) {
		t.Errorf("reissued %v expiring %v, was %v expiring %v", after.Leaf.SerialNumber, after.Leaf.NotAfter,
			before.Leaf.SerialNumber, before.Leaf.NotAfter)
	}
	if _, err := after.Leaf.Verify(x509.VerifyOptions{Roots: sec.RootCAs(), DNSName: daemonHost,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("the reissued certificate: %v", err)
	}
}
