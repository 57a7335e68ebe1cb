// Package topology is a topology's lifecycle: every change to its
// StormBase, /storms/<id>, as a pure edit, and the ZooKeeper node budget a
// topology must fit. A topology's status lives in its StormBase, and only
// the leader changes it, each time in a fenced write; the I/O around each
// edit is named beside it:
//
//	from                  to                      when                          edit             written by
//	(none)                ACTIVE or INACTIVE      a submission commits          NewStormBase     service.submit (nimbus/submit.go)
//	ACTIVE, INACTIVE      the other               activate, deactivate          SetStatus        service.transition (nimbus/service.go)
//	any but KILLED        KILLED                  kill; removal after wait_secs Kill             service.transition
//	KILLED                (removed)               the wait is over              -                timedActions.remove (nimbus/leading)
//	ACTIVE, INACTIVE      REBALANCING             rebalance; plan and deadline  Rebalance        service.transition
//	REBALANCING           its previous status     the wait is over              FinishRebalance  timedActions.rebalance (nimbus/leading)
//
// A deadline is a wall-clock time in the StormBase, so a new leader
// honours the wait its predecessor promised. KILLED and REBALANCING
// topologies keep their slots until their wait ends (the leader's
// scheduling).
package topology
