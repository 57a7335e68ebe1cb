package cluster

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"
)

// AuthDigest is the one storm.zookeeper.auth.scheme supported: ZooKeeper's
// digest scheme, whose payload is user:password.
const AuthDigest = "digest"

// ErrAuthConfig is returned by Connect for authentication settings it
// cannot use.
var ErrAuthConfig = errors.New("cluster: bad ZooKeeper authentication settings")

// access is how a session authenticates and the ACL its nodes get.
type access struct {
	scheme  string // "" (none) or AuthDigest
	payload []byte // user:password: a secret, never logged or put in an error
	user    string
	id      string   // the digest identity, user:base64(sha1(user:password)); "" without auth
	acl     []zk.ACL // the ACL of every node the daemons create
}

// newAccess checks cfg's authentication settings and builds the ACL.
//
// Without authentication every node is open to anyone (world:anyone, all
// permissions); a super ACL then adds nothing.
//
// With digest authentication a node gives the cluster's identity every
// permission, the super ACL's identity (an operator's, say) every
// permission too, and anyone else READ only: anonymous clients may watch
// the cluster but not change it. READ for anyone is safe because none of
// our nodes carries a topology's conf: a StormBase names the topology,
// its owner, status and executor counts, an assignment its slots, a
// registration a host and port, a heartbeat its workers (their last error
// is free text, which must not quote conf values); the conf, which may
// hold secrets, lives in the code store, inside the spec the code digest
// covers. A payload that could hold secrets must not be added to
// ZooKeeper under this ACL.
func newAccess(cfg SessionConfig) (access, error) {
	switch cfg.AuthScheme {
	case "":
		if cfg.AuthPayload != "" {
			return access{}, fmt.Errorf("%w: a payload without a scheme", ErrAuthConfig)
		}
		return access{acl: zk.WorldACL(zk.PermAll)}, nil
	case AuthDigest:
	default:
		return access{}, fmt.Errorf("%w: scheme %q, want %q or none", ErrAuthConfig, cfg.AuthScheme, AuthDigest)
	}
	user, password, ok := strings.Cut(cfg.AuthPayload, ":")
	if !ok || user == "" {
		return access{}, fmt.Errorf("%w: the digest payload is not user:password", ErrAuthConfig)
	}
	own := zk.DigestACL(zk.PermAll, user, password)[0]
	acl := []zk.ACL{own}
	if cfg.SuperACL != "" {
		scheme, id, ok := strings.Cut(cfg.SuperACL, ":")
		if !ok || scheme == "" || id == "" {
			return access{}, fmt.Errorf("%w: super ACL %q is not scheme:id", ErrAuthConfig, cfg.SuperACL)
		}
		if scheme != own.Scheme || id != own.ID {
			acl = append(acl, zk.ACL{Perms: zk.PermAll, Scheme: scheme, ID: id})
		}
	}
	acl = append(acl, zk.ACL{Perms: zk.PermRead, Scheme: "world", ID: "anyone"})
	return access{scheme: AuthDigest, payload: []byte(cfg.AuthPayload), user: user, id: own.ID, acl: acl}, nil
}

// ACL is the ACL of every node the daemons create, the one place it is
// chosen (see SessionConfig.AuthScheme). The caller may keep the slice.
func (s *Session) ACL() []zk.ACL { return slices.Clone(s.access.acl) }

// needed are the permissions a daemon needs on the directories it owns:
// all but ADMIN, which only changing ACLs needs.
const needed = zk.PermRead | zk.PermWrite | zk.PermCreate | zk.PermDelete

// checkACLs looks at the ACLs of the root and of dirs. It returns an error
// when they certainly keep this daemon from writing (wrong or missing
// credentials), and with authentication on it logs at error level, once,
// how to migrate nodes that anyone may change (a root created before ACLs
// were turned on). Such nodes stay writable by this daemon, so it works on.
func (s *Session) checkACLs(dirs []string) error {
	var open []string
	for _, p := range append([]string{s.paths.Root}, dirs...) {
		world, err := s.checkWritable(p)
		if err != nil {
			return err
		}
		if s.access.scheme != "" && world&^zk.PermRead != 0 {
			open = append(open, p+" world:anyone:"+permString(world))
		}
	}
	if len(open) > 0 {
		s.log.Error("ZooKeeper nodes created without ACLs: anyone may change them; this daemon works on, but migrate them once every daemon has storm.zookeeper.auth.scheme and .payload",
			"open", strings.Join(open, ", "), "migrate", s.MigrateCommand())
	}
	return nil
}

// checkWritable reads p's ACL and fails if it certainly keeps this daemon
// from writing. It returns what the ACL gives anyone.
func (s *Session) checkWritable(p string) (int32, error) {
	acl, _, err := s.Conn().GetACL(p)
	if errors.Is(err, zk.ErrNoAuth) { // ZooKeeper 3.6+ wants READ or ADMIN
		return 0, s.cannotWrite(p, nil, 0)
	}
	if err != nil {
		return 0, fmt.Errorf("cluster: read the ACL of %s: %w", p, err)
	}
	world, mine, opaque := s.access.permsIn(acl)
	if mine&needed != needed && !opaque {
		return 0, s.cannotWrite(p, acl, mine)
	}
	return world, nil
}

// permsIn returns what acl gives anyone, what it gives this session's
// identity (anyone's included), and whether it has entries this process
// cannot evaluate (of schemes such as ip, sasl or x509, or a digest hidden
// from it), which might give it more.
func (a access) permsIn(acl []zk.ACL) (world, mine int32, opaque bool) {
	for _, e := range acl {
		switch {
		case e.Scheme == "world" && e.ID == "anyone":
			world |= e.Perms
			mine |= e.Perms
		case e.Scheme == AuthDigest && a.id != "" && e.ID == a.id:
			mine |= e.Perms
		case e.Scheme == AuthDigest && a.id != "" && e.ID == a.user+":x" && e.Perms&zk.PermAdmin == 0:
			// ZooKeeper (3.6+) shows digests as user:x to whoever lacks
			// ADMIN on the node: this may be our identity without it.
			// With ADMIN it would be, and we would see the digest.
			opaque = true
		case e.Scheme == AuthDigest:
		default:
			opaque = true
		}
	}
	return world, mine, opaque
}

// cannotWrite is the error for a node this daemon cannot write.
func (s *Session) cannotWrite(p string, acl []zk.ACL, mine int32) error {
	hint := "set storm.zookeeper.auth.scheme: digest and storm.zookeeper.auth.payload to the cluster's credentials"
	if s.access.scheme != "" {
		hint = fmt.Sprintf("storm.zookeeper.auth.payload (user %q) is not the identity the cluster's nodes were created with", s.access.user)
	}
	shown := "unreadable"
	if acl != nil {
		shown = formatACL(acl, true)
	}
	return fmt.Errorf("cluster: %s: its ACL (%s) gives this daemon %q, it needs %q: %s",
		p, shown, permString(mine), permString(needed), hint)
}

// MigrateCommand is the zkCli.sh command (ZooKeeper 3.8) that gives every
// node under the root this session's ACL: what to run once every daemon
// authenticates, to protect a root created before ACLs were turned on. It
// spells the ACL out (the digest identity, never the password). Without
// authentication it is "".
//
// It needs no credentials: anyone may change the ACL of a node open to
// anyone. zkCli.sh reports NoAuth for the nodes that already carry the
// ACL and goes on with the rest. Nodes created meanwhile by a daemon
// without the credentials may be missed; once every daemon has them there
// are none, and running the command again does no harm.
func (s *Session) MigrateCommand() string {
	if s.access.scheme == "" {
		return ""
	}
	return fmt.Sprintf("zkCli.sh -server %s setAcl -R %s '%s'",
		strings.Join(s.servers, ","), s.paths.Root, formatACL(s.access.acl, false))
}

// formatACL writes acl as zkCli.sh does: scheme:id:perms, comma-separated.
// masked leaves the digest of digest identities out: it is derived from a
// password, and the ACL may be another identity's.
func formatACL(acl []zk.ACL, masked bool) string {
	parts := make([]string, len(acl))
	for i, e := range acl {
		id := e.ID
		if masked && e.Scheme == AuthDigest {
			user, _, _ := strings.Cut(id, ":")
			id = user + ":…"
		}
		parts[i] = e.Scheme + ":" + id + ":" + permString(e.Perms)
	}
	return strings.Join(parts, ",")
}

// permString writes permissions as zkCli.sh does, in its order: cdrwa.
func permString(p int32) string {
	var b strings.Builder
	for _, f := range []struct {
		perm int32
		c    byte
	}{{zk.PermCreate, 'c'}, {zk.PermDelete, 'd'}, {zk.PermRead, 'r'}, {zk.PermWrite, 'w'}, {zk.PermAdmin, 'a'}} {
		if p&f.perm != 0 {
			b.WriteByte(f.c)
		}
	}
	return b.String()
}
