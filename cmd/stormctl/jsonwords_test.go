package main

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// printed are the message types stormctl prints as JSON: the read
// commands' responses and the parts they list, submit's answer, and the
// summary the managing commands print.
var printed = []proto.Message{
	&nimbusv1.GetLeaderResponse{},
	&nimbusv1.GetClusterInfoResponse{},
	&nimbusv1.ClusterSummary{},
	&nimbusv1.NimbusSummary{},
	&nimbusv1.SupervisorSummary{},
	&nimbusv1.TopologySummary{},
	&nimbusv1.GetTopologyInfoResponse{},
	&nimbusv1.SubmitTopologyResponse{},
}

// fill sets every field of m, walking its descriptor so fields added
// later are covered too: 64-bit integers above 2^32, bytes, the last
// value of each enum, two entries per list and map.
func fill(m protoreflect.Message, depth int) {
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		switch {
		case fd.IsList():
			l := m.Mutable(fd).List()
			for range 2 {
				if fd.Kind() == protoreflect.MessageKind {
					if depth < 4 {
						fill(l.AppendMutable().Message(), depth+1)
					}
					continue
				}
				l.Append(scalar(fd, l.Len()))
			}
		case fd.IsMap():
			mp := m.Mutable(fd).Map()
			for j := range 2 {
				k := scalar(fd.MapKey(), j).MapKey()
				if fd.MapValue().Kind() == protoreflect.MessageKind {
					if depth < 4 {
						fill(mp.Mutable(k).Message(), depth+1)
					}
					continue
				}
				mp.Set(k, scalar(fd.MapValue(), j))
			}
		case fd.Kind() == protoreflect.MessageKind:
			if depth < 4 {
				fill(m.Mutable(fd).Message(), depth+1)
			}
		default:
			m.Set(fd, scalar(fd, 0))
		}
	}
}

// scalar is a value of fd's kind, different for each i.
func scalar(fd protoreflect.FieldDescriptor, i int) protoreflect.Value {
	n := int64(i + 1)
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(true)
	case protoreflect.EnumKind:
		vals := fd.Enum().Values()
		return protoreflect.ValueOfEnum(vals.Get(vals.Len() - 1 - i%vals.Len()).Number())
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(n * 7))
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(n * 7))
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(n<<33 + 5)
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(uint64(n<<33 + 5))
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(float32(n) + 0.5)
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(float64(n) + 0.5)
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(fmt.Sprintf("%s-%d", fd.Name(), n))
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte{0xfb, 0xff, byte(n), 0x3e})
	}
	panic(fmt.Sprintf("fill: kind %v", fd.Kind()))
}

var word = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// checkWords fails unless v, the generic JSON of a message of type md, has
// every 64-bit integer as a number, bytes as lowercase hex and enum values
// as lowercase words without their enum's prefix.
func checkWords(t *testing.T, md protoreflect.MessageDescriptor, v any, at string) {
	t.Helper()
	obj, ok := v.(map[string]any)
	if !ok {
		t.Errorf("%s: %T, want an object", at, v)
		return
	}
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		fv, ok := obj[fd.JSONName()]
		if !ok {
			t.Errorf("%s.%s: missing", at, fd.JSONName())
			continue
		}
		each := func(fd protoreflect.FieldDescriptor, v any, at string) { checkValue(t, fd, v, at) }
		switch {
		case fd.IsList():
			for j, e := range fv.([]any) {
				each(fd, e, fmt.Sprintf("%s.%s[%d]", at, fd.JSONName(), j))
			}
		case fd.IsMap():
			for k, e := range fv.(map[string]any) {
				each(fd.MapValue(), e, fmt.Sprintf("%s.%s[%s]", at, fd.JSONName(), k))
			}
		default:
			each(fd, fv, at+"."+fd.JSONName())
		}
	}
}

func checkValue(t *testing.T, fd protoreflect.FieldDescriptor, v any, at string) {
	t.Helper()
	switch fd.Kind() {
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind,
		protoreflect.Uint64Kind, protoreflect.Fixed64Kind,
		protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		if _, ok := v.(json.Number); !ok {
			t.Errorf("%s: %#v, want a JSON number", at, v)
		}
	case protoreflect.BytesKind:
		s, _ := v.(string)
		if _, err := hex.DecodeString(s); err != nil || s != strings.ToLower(s) {
			t.Errorf("%s: %#v, want lowercase hex", at, v)
		}
	case protoreflect.EnumKind:
		s, _ := v.(string)
		prefix := strings.ToLower(screamingSnake(string(fd.Enum().Name()))) + "_"
		if !word.MatchString(s) || strings.HasPrefix(s, prefix) {
			t.Errorf("%s: %#v, want a lowercase word without %q", at, v, prefix)
		}
	case protoreflect.MessageKind:
		if v != nil {
			checkWords(t, fd.Message(), v, at)
		}
	}
}

func TestJSONWordsForEveryPrintedMessage(t *testing.T) {
	for _, zero := range printed {
		t.Run(string(zero.ProtoReflect().Descriptor().Name()), func(t *testing.T) {
			msg := zero.ProtoReflect().New().Interface()
			fill(msg.ProtoReflect(), 0)
			var b bytes.Buffer
			if err := writeJSON(&b, msg); err != nil {
				t.Fatal(err)
			}
			d := json.NewDecoder(bytes.NewReader(b.Bytes()))
			d.UseNumber()
			var doc any
			if err := d.Decode(&doc); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, b.String())
			}
			checkWords(t, msg.ProtoReflect().Descriptor(), doc, "")
			// Nothing is lost: the words read back as the message.
			back := zero.ProtoReflect().New().Interface()
			unmarshal(t, b.String(), back)
			if !proto.Equal(back, msg) {
				t.Errorf("read back %v, want %v\n%s", back, msg, b.String())
			}
		})
	}
}

func TestJSONWordsExample(t *testing.T) {
	var b bytes.Buffer
	err := writeJSON(&b, &nimbusv1.GetTopologyInfoResponse{
		Topology: &nimbusv1.TopologySummary{
			Name: "wordcount", Status: clusterv1.TopologyStatus_TOPOLOGY_STATUS_ACTIVE, UptimeSecs: 22, NumWorkers: 2,
		},
		CodeMetaDigest: []byte{0x01, 0x23, 0xab},
		Storage:        map[string]string{"path": "/a<b>&c"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"status": "active"`, `"uptimeSecs": 22,`, `"numWorkers": 2,`, `"codeMetaDigest": "0123ab"`, `"path": "/a<b>&c"`,
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("want %s in\n%s", want, b.String())
		}
	}
	// Fields in the order of their numbers, as protojson writes them.
	if i, j := strings.Index(b.String(), `"id"`), strings.Index(b.String(), `"name"`); i < 0 || i > j {
		t.Errorf("id should come before name:\n%s", b.String())
	}
}

func TestStatusNameIsTheJSONWord(t *testing.T) {
	for n := range clusterv1.TopologyStatus_name {
		s := clusterv1.TopologyStatus(n)
		v, err := jsonMessage(&nimbusv1.TopologySummary{Status: s})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range v.(object) {
			if m.key == "status" && m.value != statusName(s) {
				t.Errorf("%v: JSON %q, table %q", s, m.value, statusName(s))
			}
		}
	}
	if got := statusName(clusterv1.TopologyStatus_TOPOLOGY_STATUS_REBALANCING); got != "rebalancing" {
		t.Errorf("statusName(REBALANCING) = %q", got)
	}
}

func TestPlainWords(t *testing.T) {
	for in, want := range map[string]string{
		"nimbus: action not allowed in the topology's status: wordcount is TOPOLOGY_STATUS_KILLED": "nimbus: action not allowed in the topology's status: wordcount is killed",
		"x is TOPOLOGY_STATUS_REBALANCING, not TOPOLOGY_STATUS_ACTIVE":                             "x is rebalancing, not active",
		"ACTIVE stays": "ACTIVE stays",
	} {
		if got := plainWords(in); got != want {
			t.Errorf("plainWords(%q) = %q, want %q", in, got, want)
		}
	}
}

// unmarshal parses a command's JSON output into msg: stormctl's words are
// turned back into protobuf's JSON mapping (the inverse of jsonMessage),
// which protojson then reads.
func unmarshal(t *testing.T, out string, msg proto.Message) {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(out))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	b, err := json.Marshal(fromWords(t, msg.ProtoReflect().Descriptor(), v))
	if err != nil {
		t.Fatal(err)
	}
	if err := protojson.Unmarshal(b, msg); err != nil {
		t.Fatalf("output is not a %T: %v\n%s", msg, err, out)
	}
}

func fromWords(t *testing.T, md protoreflect.MessageDescriptor, v any) any {
	obj, ok := v.(map[string]any)
	if !ok {
		return v
	}
	fields := md.Fields()
	for _, k := range slices.Collect(maps.Keys(obj)) {
		fd := fields.ByJSONName(k)
		if fd == nil {
			continue
		}
		switch {
		case fd.IsList():
			for i, e := range obj[k].([]any) {
				obj[k].([]any)[i] = fromWord(t, fd, e)
			}
		case fd.IsMap():
			m := obj[k].(map[string]any)
			for mk, e := range m {
				m[mk] = fromWord(t, fd.MapValue(), e)
			}
		default:
			obj[k] = fromWord(t, fd, obj[k])
		}
	}
	return obj
}

func fromWord(t *testing.T, fd protoreflect.FieldDescriptor, v any) any {
	s, isString := v.(string)
	switch {
	case fd.Kind() == protoreflect.BytesKind && isString:
		b, err := hex.DecodeString(s)
		if err != nil {
			t.Fatalf("%s: %q is not hex", fd.FullName(), s)
		}
		return base64.StdEncoding.EncodeToString(b)
	case fd.Kind() == protoreflect.EnumKind && isString:
		vals := fd.Enum().Values()
		for i := range vals.Len() {
			if enumWord(vals.Get(i)) == s {
				return string(vals.Get(i).Name())
			}
		}
		t.Fatalf("%s: %q is no value's word", fd.FullName(), s)
	case fd.Kind() == protoreflect.MessageKind:
		return fromWords(t, fd.Message(), v)
	}
	return v
}
