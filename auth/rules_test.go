package auth_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/nimbusha/nimbus/apierr"
	"github.com/nimbusha/nimbus/auth"
)

// The cast: one principal per role, each in exactly one list.
const (
	admin      = "ada"   // nimbus.admins
	owner      = "olive" // the topology's owner
	topoUser   = "tom"   // its topology.users
	nimbusUser = "uma"   // nimbus.users
	supervisor = "sup"   // nimbus.supervisor.users
	daemon     = "nim"   // nimbus.daemon.users
	stranger   = "eve"   // authenticated, in no list
)

var cast = []string{admin, owner, topoUser, nimbusUser, supervisor, daemon, stranger}

const topologyID = "bobjob-3-1700000000"

var target = auth.Target{Topology: topologyID, Owner: owner, Users: []string{"someone", topoUser}}

func policy(users ...string) auth.Policy {
	return auth.Policy{Admins: []string{admin}, Users: users, Supervisors: []string{supervisor}, Daemons: []string{daemon}}
}

// TestDecideTable is every action against every role, with nimbus.users
// set and empty. The expectations are written out by hand, one letter per
// member of cast, in its order (Y allowed, n refused), so that they do not
// share the code under test.
func TestDecideTable(t *testing.T) {
	//                                       ada olive tom uma sup nim eve
	want := map[bool]map[auth.Action]string{
		true: { // nimbus.users = [uma]
			auth.ActionSubmit:      "YnnYnnn",
			auth.ActionKill:        "YYYnnnn",
			auth.ActionActivate:    "YYYnnnn",
			auth.ActionDeactivate:  "YYYnnnn",
			auth.ActionRebalance:   "YYYnnnn",
			auth.ActionReadConf:    "YYYnnnn",
			auth.ActionFetchCode:   "YYYnYYn",
			auth.ActionReadCluster: "YYYYYYY",

			auth.ActionReadNimbusConfig: "Ynnnnnn",
			auth.ActionRecoverCode:      "YnnnnYn",
			auth.ActionForget:           "Ynnnnnn",
			auth.ActionHandOver:         "Ynnnnnn",
			auth.ActionSnapshot:         "Ynnnnnn",
			auth.ActionRestartWorker:    "YYnnnnn",
			auth.ActionSetLogConfig:     "YYYnnnn",
			auth.ActionReadLogs:         "YYYnnnn",

			auth.ActionCreateBlob: "YnnYnnn",
			auth.ActionReadBlob:   "YnnnYYn", // the target's ACL grants no one
			auth.ActionWriteBlob:  "Ynnnnnn",
			auth.ActionAdminBlob:  "YYnnnnn",
		},
		false: { // nimbus.users empty: any authenticated principal may submit
			auth.ActionSubmit:      "YYYYYYY",
			auth.ActionKill:        "YYYnnnn",
			auth.ActionActivate:    "YYYnnnn",
			auth.ActionDeactivate:  "YYYnnnn",
			auth.ActionRebalance:   "YYYnnnn",
			auth.ActionReadConf:    "YYYnnnn",
			auth.ActionFetchCode:   "YYYnYYn",
			auth.ActionReadCluster: "YYYYYYY",

			auth.ActionReadNimbusConfig: "Ynnnnnn",
			auth.ActionRecoverCode:      "YnnnnYn",
			auth.ActionForget:           "Ynnnnnn",
			auth.ActionHandOver:         "Ynnnnnn",
			auth.ActionSnapshot:         "Ynnnnnn",
			auth.ActionRestartWorker:    "YYnnnnn",
			auth.ActionSetLogConfig:     "YYYnnnn",
			auth.ActionReadLogs:         "YYYnnnn",

			auth.ActionCreateBlob: "YYYYYYY",
			auth.ActionReadBlob:   "YnnnYYn",
			auth.ActionWriteBlob:  "Ynnnnnn",
			auth.ActionAdminBlob:  "YYnnnnn",
		},
	}
	for _, usersSet := range []bool{true, false} {
		p := policy()
		if usersSet {
			p = policy(nimbusUser)
		}
		if len(want[usersSet]) != len(auth.Actions()) {
			t.Fatalf("the table covers %d actions, there are %d", len(want[usersSet]), len(auth.Actions()))
		}
		for _, act := range auth.Actions() {
			row, ok := want[usersSet][act]
			if !ok {
				t.Fatalf("no expectation for %s", act)
			}
			for i, who := range cast {
				t.Run(fmt.Sprintf("users=%v/%s/%s", usersSet, act, who), func(t *testing.T) {
					err := auth.Decide(p, who, act, target)
					if row[i] == 'Y' {
						if err != nil {
							t.Fatalf("refused: %v", err)
						}
						return
					}
					if !errors.Is(err, apierr.ErrPermissionDenied) {
						t.Fatalf("got %v, want a PermissionDenied refusal", err)
					}
					for _, s := range []string{who + " may not ", topologyID} {
						if !strings.Contains(err.Error(), s) {
							t.Errorf("refusal %q does not say %q", err, s)
						}
					}
				})
			}
		}
	}
}

// TestDecideNoOne: an empty principal is no one, whatever the action.
func TestDecideNoOne(t *testing.T) {
	for _, act := range auth.Actions() {
		err := auth.Decide(policy(), "", act, target)
		if !errors.Is(err, apierr.ErrUnauthenticated) {
			t.Errorf("%s with no principal: got %v, want Unauthenticated", act, err)
		}
	}
}

func TestDecideUnknownAction(t *testing.T) {
	err := auth.Decide(policy(), admin, auth.Action("format-disk"), target)
	if !errors.Is(err, apierr.ErrPermissionDenied) {
		t.Fatalf("an unknown action, even for an admin: got %v, want PermissionDenied", err)
	}
}

// TestDecideMessages pins the wording operators and clients read.
func TestDecideMessages(t *testing.T) {
	for _, tc := range []struct {
		act  auth.Action
		t    auth.Target
		want string
	}{
		{auth.ActionKill, target, "alice may not kill bobjob-3-1700000000: not its owner, in topology.users or nimbus.admins"},
		{auth.ActionRebalance, target, "alice may not rebalance bobjob-3-1700000000: not its owner, in topology.users or nimbus.admins"},
		{auth.ActionRestartWorker, target, "alice may not restart a worker of bobjob-3-1700000000: not its owner or in nimbus.admins"},
		{auth.ActionReadConf, target, "alice may not read the conf of bobjob-3-1700000000: not its owner, in topology.users or nimbus.admins"},
		{auth.ActionFetchCode, target, "alice may not fetch the code of bobjob-3-1700000000: not its owner, in topology.users, nimbus.supervisor.users, nimbus.daemon.users or nimbus.admins"},
		{auth.ActionSubmit, auth.Target{}, "alice may not submit: not in nimbus.users or nimbus.admins"},
		{auth.ActionReadNimbusConfig, auth.Target{}, "alice may not read the nimbus configuration: not in nimbus.admins"},
		{auth.ActionSubmit, auth.Target{Topology: "wordcount"}, "alice may not submit wordcount: not in nimbus.users or nimbus.admins"},
	} {
		err := auth.Decide(policy(nimbusUser), "alice", tc.act, tc.t)
		if want := apierr.ErrPermissionDenied.Error() + ": " + tc.want; err == nil || err.Error() != want {
			t.Errorf("%s: got %v\nwant %s", tc.act, err, want)
		}
	}
}

// TestDecideNoOwner: a topology with no recorded owner (submitted with
// authentication off by a client that named none) has no owner to match.
func TestDecideNoOwner(t *testing.T) {
	if err := auth.Decide(policy(), owner, auth.ActionKill, auth.Target{Topology: topologyID}); err == nil {
		t.Fatal("allowed to kill a topology with no owner")
	}
	if err := auth.Decide(policy(), admin, auth.ActionKill, auth.Target{Topology: topologyID}); err != nil {
		t.Fatalf("an admin: %v", err)
	}
}

func TestTopologyUsers(t *testing.T) {
	for _, tc := range []struct {
		conf map[string]string
		want []string
	}{
		{nil, nil},
		{map[string]string{"topology.users": ""}, nil},
		{map[string]string{"topology.users": "alice"}, []string{"alice"}},
		{map[string]string{"topology.users": " alice, bob ,,carol@example.com ,"}, []string{"alice", "bob", "carol@example.com"}},
		{map[string]string{"topology.workers": "alice"}, nil},
	} {
		if got := auth.TopologyUsers(tc.conf); !slices.Equal(got, tc.want) {
			t.Errorf("TopologyUsers(%v) = %q, want %q", tc.conf, got, tc.want)
		}
	}
}

// TestDecideReadLogs: logs.users, the cluster's or the topology's, may
// read its worker logs and do nothing else; a refusal names the lists.
func TestDecideReadLogs(t *testing.T) {
	const logReader = "lou"
	p := policy()
	p.LogsUsers = []string{"clusterwide"}
	tgt := target
	tgt.LogsUsers = []string{logReader}
	for _, who := range []string{logReader, "clusterwide", owner, topoUser, admin} {
		if err := auth.Decide(p, who, auth.ActionReadLogs, tgt); err != nil {
			t.Errorf("%s refused: %v", who, err)
		}
	}
	for _, act := range []auth.Action{auth.ActionKill, auth.ActionReadConf, auth.ActionFetchCode} {
		if err := auth.Decide(p, logReader, act, tgt); err == nil {
			t.Errorf("a logs.users principal may %s", act)
		}
	}
	err := auth.Decide(p, stranger, auth.ActionReadLogs, tgt)
	want := apierr.ErrPermissionDenied.Error() + ": eve may not read the worker logs of bobjob-3-1700000000: not its owner, in topology.users, logs.users or nimbus.admins"
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

// TestDecideBlobGrants: a blob's ACL grants an action to the users it
// names, or to anyone with an o entry; the refusal says so.
func TestDecideBlobGrants(t *testing.T) {
	p := policy()
	named := auth.Target{Topology: "dictionary", Owner: owner, Grantees: []string{stranger}}
	if err := auth.Decide(p, stranger, auth.ActionWriteBlob, named); err != nil {
		t.Fatalf("a user the ACL names: %v", err)
	}
	err := auth.Decide(p, topoUser, auth.ActionWriteBlob, named)
	if !errors.Is(err, apierr.ErrPermissionDenied) || !strings.Contains(err.Error(), "granted it by the blob's ACL") {
		t.Fatalf("a user the ACL does not name: %v", err)
	}
	anyone := auth.Target{Topology: "dictionary", Owner: owner, Anyone: true}
	if err := auth.Decide(p, topoUser, auth.ActionReadBlob, anyone); err != nil {
		t.Fatalf("an o entry: %v", err)
	}
}
