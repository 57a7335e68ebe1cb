package stats

import (
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The messages that carry Counts (cluster.v1.StreamStats in a heartbeat,
// nimbus.v1.TupleCounts in an answer) name their fields as the worker
// protocol's metrics file does; CountsOf and SetCounts read and write them
// by those names, so no copy of the list lives beside each message.

// fieldNames are Counts' fields, in fields' order, as messages name them.
var fieldNames = [8]protoreflect.Name{"emitted", "transferred", "acked", "failed", "executed",
	"complete_latency_us", "process_latency_us", "execute_latency_us"}

// fieldsByMessage caches each message type's fields of fieldNames.
var fieldsByMessage sync.Map // protoreflect.FullName -> *[8]protoreflect.FieldDescriptor

func fieldsOf(m protoreflect.Message) *[8]protoreflect.FieldDescriptor {
	d := m.Descriptor()
	if fs, ok := fieldsByMessage.Load(d.FullName()); ok {
		return fs.(*[8]protoreflect.FieldDescriptor)
	}
	var fs [8]protoreflect.FieldDescriptor
	for i, name := range fieldNames {
		if f := d.Fields().ByName(name); f != nil && f.Kind() == protoreflect.Uint64Kind && f.Cardinality() != protoreflect.Repeated {
			fs[i] = f
		}
	}
	fieldsByMessage.Store(d.FullName(), &fs)
	return &fs
}

// CountsOf is the counts m carries; a field m lacks counts 0.
func CountsOf(m proto.Message) Counts {
	r := m.ProtoReflect()
	if !r.IsValid() {
		return Counts{}
	}
	var f [8]uint64
	for i, fd := range fieldsOf(r) {
		if fd != nil {
			f[i] = r.Get(fd).Uint()
		}
	}
	return countsOf(f)
}

// SetCounts writes c into m's fields of its names.
func SetCounts(m proto.Message, c Counts) {
	r := m.ProtoReflect()
	for i, v := range c.fields() {
		if fd := fieldsOf(r)[i]; fd != nil {
			r.Set(fd, protoreflect.ValueOfUint64(v))
		}
	}
}

// Share is c divided by n (at least 1), as each of n executors' even
// share of what they counted together.
func (c Counts) Share(n uint64) Counts {
	n = max(n, 1)
	f := c.fields()
	for i := range f {
		f[i] /= n
	}
	return countsOf(f)
}
