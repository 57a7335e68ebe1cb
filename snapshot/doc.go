// Package snapshot owns the cluster snapshot: a file that holds, at one
// point in time, every persistent node under the cluster's ZooKeeper root
// and each topology's stored spec (with the code too, on request), which
// put back onto an empty root makes the same cluster again
// (docs/ARCHITECTURE.md section 20). It writes and reads the file's format
// (format.go: records, a trailer that refuses a truncated or altered file
// whole) and takes and puts back the nodes (zk.go).
package snapshot
