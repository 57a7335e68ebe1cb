package cluster

import "github.com/go-zookeeper/zk"

// ZooKeeper's answers that callers act on, and the session state they
// compare with. They are go-zookeeper's own values, so errors.Is matches
// either name; outside this package and the election, nothing names
// go-zookeeper.
var (
	ErrNoNode     = zk.ErrNoNode     // the node is not there
	ErrNodeExists = zk.ErrNodeExists // a create found the node there
	ErrBadVersion = zk.ErrBadVersion // the node is not at the version checked
	ErrNotEmpty   = zk.ErrNotEmpty   // a deleted node has children
)

// StateHasSession is the state (Session.State) in which the session is
// established and calls are answered.
const StateHasSession = zk.StateHasSession

// MultiResponse is one operation's result in a multi, in the order of the
// operations.
type MultiResponse = zk.MultiResponse

// Watch fires once, when what was read with it changes.
type Watch = <-chan zk.Event
