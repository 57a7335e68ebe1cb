package auth

import (
	"fmt"
	"slices"
	"strings"

	"github.com/nimbusha/nimbus/apierr"
	"github.com/nimbusha/nimbus/configs"
)

// Policy is the cluster's part of the rules: the principals
// nimbus.admins, nimbus.users, nimbus.supervisor.users and
// nimbus.daemon.users name.
type Policy struct {
	Admins      []string // nimbus.admins: may do everything
	Users       []string // nimbus.users: may submit; empty means any authenticated principal
	Supervisors []string // nimbus.supervisor.users: fetch any topology's code
	Daemons     []string // nimbus.daemon.users: the nimbuses, which fetch code from each other
	LogsUsers   []string // logs.users: read every topology's worker logs
}

// PolicyOf is the policy cfg configures.
func PolicyOf(cfg *configs.Config) Policy {
	return Policy{Admins: slices.Clone(cfg.NimbusAdmins), Users: slices.Clone(cfg.NimbusUsers),
		Supervisors: slices.Clone(cfg.NimbusSupervisorUsers), Daemons: slices.Clone(cfg.NimbusDaemonUsers),
		LogsUsers: slices.Clone(cfg.LogsUsers)}
}

// Target is what an action is on: the topology's part of the rules. For
// actions on no one topology (read-cluster) it is the zero Target; a
// submit's names the topology if it is known yet, and has no owner.
type Target struct {
	Topology string   // its id (or name, where the id is not known yet), for messages
	Owner    string   // the owner recorded with it (StormBase.owner, the spec's owner)
	Users    []string // its topology.users (TopologyUsers parses the conf's value)
	// LogsUsers are the logs.users of its conf (TopologyUsers with
	// configs.TopologyLogsUsers parses them), for ActionReadLogs.
	LogsUsers []string
	// Grantees are the users a blob's ACL grants the action (its u
	// entries), and Anyone whether an o entry grants it to every
	// principal. Topology is then the blob's key, and Owner its owner.
	Grantees []string
	Anyone   bool
}

// role is one way a principal may stand to a request; roles combine as
// bits.
type role uint16

const (
	roleAuthenticated role = 1 << iota // any verified principal
	roleAdmin                          // in nimbus.admins
	roleUser                           // in nimbus.users, or nimbus.users is empty
	roleSupervisor                     // in nimbus.supervisor.users
	roleDaemon                         // in nimbus.daemon.users
	roleOwner                          // the topology's owner
	roleTopologyUser                   // in the topology's topology.users
	roleLogsUser                       // in logs.users, the cluster's or the topology's
	roleGrantee                        // granted the action by a blob's ACL
)

// rules says which roles may take each action: the whole of the
// authorization policy. nimbus.admins appear in every row.
var rules = map[Action]role{
	ActionSubmit:      roleAdmin | roleUser,
	ActionKill:        roleAdmin | roleOwner | roleTopologyUser,
	ActionActivate:    roleAdmin | roleOwner | roleTopologyUser,
	ActionDeactivate:  roleAdmin | roleOwner | roleTopologyUser,
	ActionRebalance:   roleAdmin | roleOwner | roleTopologyUser,
	ActionReadConf:    roleAdmin | roleOwner | roleTopologyUser,
	ActionFetchCode:   roleAdmin | roleOwner | roleTopologyUser | roleSupervisor | roleDaemon,
	ActionReadCluster: roleAdmin | roleAuthenticated,

	ActionReadNimbusConfig: roleAdmin,
	ActionRecoverCode:      roleAdmin | roleDaemon,
	ActionForget:           roleAdmin,
	ActionHandOver:         roleAdmin,
	ActionSnapshot:         roleAdmin,
	ActionRestartWorker:    roleAdmin | roleOwner,
	ActionSetLogConfig:     roleAdmin | roleOwner | roleTopologyUser,
	ActionReadLogs:         roleAdmin | roleOwner | roleTopologyUser | roleLogsUser,

	// Blobs: Storm's ACLs decide; the nodes that place blobs read them,
	// and the owner may always change the ACL, so it is never locked out.
	ActionCreateBlob: roleAdmin | roleUser,
	ActionReadBlob:   roleAdmin | roleGrantee | roleSupervisor | roleDaemon,
	ActionWriteBlob:  roleAdmin | roleGrantee,
	ActionAdminBlob:  roleAdmin | roleOwner | roleGrantee,
}

// Decide answers "may principal take act on t?" under p: nil, or an error
// wrapping apierr.ErrPermissionDenied that names the principal, the action,
// the topology and the lists that would have allowed it. An empty principal
// is no one: apierr.ErrUnauthenticated. Decide is pure; with authentication
// off nobody asks it (Authorizer allows everything).
func Decide(p Policy, principal string, act Action, t Target) error {
	if principal == "" {
		return fmt.Errorf("%w: %s needs a verified client certificate", apierr.ErrUnauthenticated, act)
	}
	allowed, ok := rules[act]
	if !ok {
		return fmt.Errorf("%w: %s may not %q: not an action nimbus knows", apierr.ErrPermissionDenied, principal, string(act))
	}
	if allowed&rolesOf(p, principal, t) != 0 {
		return nil
	}
	what := act.phrase()
	if t.Topology != "" {
		what += " " + t.Topology
	}
	return fmt.Errorf("%w: %s may not %s: not %s", apierr.ErrPermissionDenied, principal, what, describe(allowed))
}

// rolesOf is every role principal holds for t under p.
func rolesOf(p Policy, principal string, t Target) role {
	r := roleAuthenticated
	if slices.Contains(p.Admins, principal) {
		r |= roleAdmin
	}
	if len(p.Users) == 0 || slices.Contains(p.Users, principal) {
		r |= roleUser
	}
	if slices.Contains(p.Supervisors, principal) {
		r |= roleSupervisor
	}
	if slices.Contains(p.Daemons, principal) {
		r |= roleDaemon
	}
	if t.Owner != "" && t.Owner == principal {
		r |= roleOwner
	}
	if slices.Contains(t.Users, principal) {
		r |= roleTopologyUser
	}
	if slices.Contains(p.LogsUsers, principal) || slices.Contains(t.LogsUsers, principal) {
		r |= roleLogsUser
	}
	if t.Anyone || slices.Contains(t.Grantees, principal) {
		r |= roleGrantee
	}
	return r
}

// describe says what a refused principal is not, for the roles that would
// have allowed it: "its owner, in topology.users or nimbus.admins".
func describe(allowed role) string {
	var lists []string
	for _, l := range []struct {
		r   role
		key string
	}{
		{roleTopologyUser, configs.TopologyUsers},
		{roleLogsUser, configs.KeyLogsUsers},
		{roleUser, configs.KeyNimbusUsers},
		{roleSupervisor, configs.KeyNimbusSupervisorUsers},
		{roleDaemon, configs.KeyNimbusDaemonUsers},
		{roleAdmin, configs.KeyNimbusAdmins},
	} {
		if allowed&l.r != 0 {
			lists = append(lists, l.key)
		}
	}
	var parts []string
	if allowed&roleOwner != 0 {
		parts = append(parts, "its owner")
	}
	if allowed&roleGrantee != 0 {
		parts = append(parts, "granted it by the blob's ACL")
	}
	if len(lists) > 0 {
		in := lists[len(lists)-1]
		if len(lists) > 1 {
			in = strings.Join(lists[:len(lists)-1], ", ") + " or " + in
		}
		parts = append(parts, "in "+in)
	}
	if len(lists) == 1 { // "its owner or in nimbus.admins"
		return strings.Join(parts, " or ")
	}
	return strings.Join(parts, ", ")
}

// TopologyUsers parses a topology conf's topology.users: comma-separated
// principals, spaces around them ignored.
func TopologyUsers(conf map[string]string) []string {
	return ListOf(conf, configs.TopologyUsers)
}

// ListOf parses a topology conf's list of principals under key
// (topology.users, logs.users): comma-separated, spaces around them
// ignored.
func ListOf(conf map[string]string, key string) []string {
	var users []string
	for u := range strings.SplitSeq(conf[key], ",") {
		if u = strings.TrimSpace(u); u != "" {
			users = append(users, u)
		}
	}
	return users
}
