// Package clusterid owns which cluster a daemon belongs to. The first
// leader names the cluster with a random id in /versions/cluster
// (ClusterVersion.cluster_id); every nimbus and supervisor remembers the id
// it first saw in a file of its local directory. From then on, a root
// without that id is not an empty cluster but an outage: a root wiped
// (deleteall), a ZooKeeper whose data was lost, or another cluster's
// ensemble. A daemon in such a state changes nothing it cannot undo: no
// nimbus leads or deletes code, no supervisor stops a worker or deletes
// code, until the state it remembers comes back (a snapshot restored,
// docs/ARCHITECTURE.md section 19).
package clusterid
