package validate

import (
	"maps"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
)

// ZooKeeper node sizes (docs/ARCHITECTURE.md section 14). ZooKeeper
// refuses a request packet longer than its jute.maxbuffer by closing the
// client's connection. For the leader that ends its term, and the next
// leader would send the same write: a topology whose StormBase or
// assignment does not fit would take leadership down for good. So a
// submission or rebalance is refused, before anything is written, unless
// both fit in ZKNodeBudget.

// ZKWriteMargin is what the leader's write of one node needs of
// storm.zookeeper.jute.maxbuffer besides the node's payload. The write is a
// fenced multi (invariant 3): a request header and four op headers
// (~50 bytes), the fence's check of the lock node
// (<root>/leader-lock/_c_<32 hex>-lock-<10 digits>: root + 64 bytes), an
// assignment's check of its StormBase (<root>/storms/<topology id>: root +
// 8 + at most 170 bytes), the node's path (<root>/assignments/<topology
// id>: root + 13 + at most 170 bytes), the payload's length, the ACL
// (world:anyone is 27 bytes; a digest identity, a super ACL and read for
// anyone are ~250) and the flags. That is under 800 bytes plus three times
// the root's length (TestZooKeeperAcceptsABudgetSizedWrite sends the
// scheduler's write of a budget-sized assignment under a 1 KiB root). 8 KiB
// leaves room for roots of up to 2 KiB and for ACLs with a few more
// identities.
const ZKWriteMargin = 8 << 10

// ZKNodeBudget is the largest payload the leader may write into one node
// when ZooKeeper accepts requests of up to maxBuffer bytes
// (storm.zookeeper.jute.maxbuffer, at least 64 KiB as configs validates).
func ZKNodeBudget(maxBuffer int) int { return maxBuffer - ZKWriteMargin }

// The supervisor ids and hosts an assignment bound assumes at the least.
// An assignment names a supervisor id per executor and a host per
// supervisor it uses, and supervisors can register after the bound was
// checked, so the bound takes the longest registered or these, whichever is
// longer. Supervisors name themselves sup-<16 hex> (20 bytes) unless an
// operator wrote another id in their supervisor-id file; a host name is at
// most 253 bytes in DNS.
const (
	AssumedSupervisorIDLen = 64
	AssumedHostLen         = 253
)

// Widest encodings of the Assignment's numeric fields: any int32 or int64
// (a negative one takes 10 bytes), so no supervisor's slot port or start
// time can exceed the bound.
const (
	maxVarint   = 10
	digestBytes = 32 // SHA-256
)

// AssignmentBound returns an upper bound of the encoded size of the
// Assignment (proto/cluster/v1) of a topology with the given executors per
// component and workers, as the scheduler builds it: one executor per task,
// tasks numbered from 1 in component id order (assign.Executors), each
// executor naming its component and a slot (a supervisor id of at most
// supervisorIDLen bytes, a port, a start time), a host of at most hostLen
// bytes for each supervisor used (at most one per worker), the code's
// digest and the epoch. It equals the size of the largest such assignment;
// it is computed in closed form, so a huge parallelism costs nothing to
// bound. Components with parallelism below 1 have no executors.
func AssignmentBound(executors map[string]int32, numWorkers int32, supervisorIDLen, hostLen int) int64 {
	slot := sizeBytesField(supervisorIDLen) + 1 + maxVarint // supervisor_id, port
	startTime := 1 + maxVarint
	var total, count int64
	task := int64(1)
	for _, id := range slices.Sorted(maps.Keys(executors)) {
		p := int64(executors[id])
		if p < 1 {
			continue
		}
		first, last := task, task+p-1
		task += p
		count += p
		// Tasks of one varint width cost the same: sum band by band.
		for lo := first; lo <= last; {
			width := protowire.SizeVarint(uint64(lo))
			hi := min(last, bandEnd(width))
			executor := sizeBytesField(len(id)) + 2*(1+width) // component_id, task_start, task_end
			inner := sizeMessageField(executor) + sizeMessageField(slot) + startTime
			total += (hi - lo + 1) * int64(sizeMessageField(inner))
			lo = hi + 1
		}
	}
	supervisors := min(count, int64(max(numWorkers, 1)))
	entry := sizeBytesField(supervisorIDLen) + sizeBytesField(hostLen) // key, value
	total += supervisors * int64(sizeMessageField(entry))
	total += int64(sizeBytesField(digestBytes)) + 1 + maxVarint // code_meta_digest, epoch
	return total
}

// sizeBytesField is the size of a length-delimited field of n bytes with a
// one-byte tag, present even when empty (a map entry's key and value are).
func sizeBytesField(n int) int { return 1 + protowire.SizeBytes(n) }

// sizeMessageField is the size of an embedded message of n bytes with a
// one-byte tag.
func sizeMessageField(n int) int { return sizeBytesField(n) }

// bandEnd is the largest value whose varint takes width bytes.
func bandEnd(width int) int64 {
	if width >= 9 {
		return 1<<63 - 1
	}
	return 1<<(7*width) - 1
}
