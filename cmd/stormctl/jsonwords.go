package main

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"unicode"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// stormctl's JSON is protobuf's JSON mapping (field names in lowerCamel,
// every field present) in the words of its tables: protojson writes 64-bit
// integers as strings, bytes in base64 and enum values by their full
// names; jsonMessage turns those into numbers, hex and the table's words
// (TOPOLOGY_STATUS_ACTIVE is "active"). It walks the message's descriptor,
// so any message converts, whatever fields it gains.

var jsonOptions = protojson.MarshalOptions{EmitUnpopulated: true}

// jsonMessage returns msg as a JSON value in stormctl's words, its fields
// in the order of their numbers.
func jsonMessage(msg proto.Message) (any, error) {
	b, err := jsonOptions.Marshal(msg)
	if err != nil {
		return nil, err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return convertMessage(msg.ProtoReflect().Descriptor(), v)
}

// object is a JSON object that keeps its members' order.
type object []member

type member struct {
	key   string
	value any
}

func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := marshalJSON(m.key)
		if err != nil {
			return nil, err
		}
		v, err := marshalJSON(m.value)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// marshalJSON is json.Marshal without escaping <, > and &, which a
// terminal shows as they are.
func marshalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// convertMessage converts v, protojson's rendering of a message of type
// md. Well-known types (google.protobuf.*) have JSON forms of their own
// and pass unchanged.
func convertMessage(md protoreflect.MessageDescriptor, v any) (any, error) {
	obj, ok := v.(map[string]any)
	if !ok || md.FullName().Parent() == "google.protobuf" {
		return v, nil
	}
	out := make(object, 0, len(obj))
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		fv, ok := obj[fd.JSONName()]
		if !ok {
			continue
		}
		delete(obj, fd.JSONName())
		cv, err := convertField(fd, fv)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fd.FullName(), err)
		}
		out = append(out, member{fd.JSONName(), cv})
	}
	for _, k := range slices.Sorted(maps.Keys(obj)) { // none expected: kept as they are
		out = append(out, member{k, obj[k]})
	}
	return out, nil
}

// convertField converts a field's value: each element of a list, each
// value of a map (whose keys JSON keeps as strings), or the single value.
func convertField(fd protoreflect.FieldDescriptor, v any) (any, error) {
	switch {
	case fd.IsList():
		list, ok := v.([]any)
		if !ok {
			return v, nil
		}
		out := make([]any, len(list))
		for i, e := range list {
			c, err := convertSingle(fd, e)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case fd.IsMap():
		m, ok := v.(map[string]any)
		if !ok {
			return v, nil
		}
		out := make(object, 0, len(m))
		for _, k := range slices.Sorted(maps.Keys(m)) {
			c, err := convertSingle(fd.MapValue(), m[k])
			if err != nil {
				return nil, err
			}
			out = append(out, member{k, c})
		}
		return out, nil
	}
	return convertSingle(fd, v)
}

// convertSingle converts one value of fd's kind. null (an unset message
// or optional field) stays null.
func convertSingle(fd protoreflect.FieldDescriptor, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch fd.Kind() {
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind,
		protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		if s, ok := v.(string); ok {
			return json.Number(s), nil
		}
	case protoreflect.BytesKind:
		if s, ok := v.(string); ok {
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				return nil, fmt.Errorf("bytes: %w", err)
			}
			return hex.EncodeToString(b), nil
		}
	case protoreflect.EnumKind:
		if s, ok := v.(string); ok {
			if ev := fd.Enum().Values().ByName(protoreflect.Name(s)); ev != nil {
				return enumWord(ev), nil
			}
		}
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return convertMessage(fd.Message(), v)
	}
	return v, nil
}

// enumWord is the word for an enum value: its name without the prefix
// that names its enum, in lower case (TopologyStatus's
// TOPOLOGY_STATUS_ACTIVE is "active", NOT_LEADER of an enum Reason
// "not_leader").
func enumWord(ev protoreflect.EnumValueDescriptor) string {
	name := string(ev.Name())
	prefix := screamingSnake(string(ev.Parent().Name())) + "_"
	if rest, ok := strings.CutPrefix(name, prefix); ok && rest != "" {
		name = rest
	}
	return strings.ToLower(name)
}

// screamingSnake turns TopologyStatus into TOPOLOGY_STATUS.
func screamingSnake(camel string) string {
	var b strings.Builder
	for i, r := range camel {
		if i > 0 && unicode.IsUpper(r) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	return b.String()
}

// enumWords maps every enum value name of stormctl's API (packages
// nimbus.* and cluster.*) to its word, longest names first, for error
// messages that name a value (wordcount is TOPOLOGY_STATUS_KILLED).
var enumWords = sync.OnceValue(func() *strings.Replacer {
	var pairs [][2]string
	protoregistry.GlobalTypes.RangeEnums(func(et protoreflect.EnumType) bool {
		ed := et.Descriptor()
		pkg := string(ed.ParentFile().Package())
		if !strings.HasPrefix(pkg, "nimbus.") && !strings.HasPrefix(pkg, "cluster.") {
			return true
		}
		values := ed.Values()
		for i := range values.Len() {
			ev := values.Get(i)
			// Only names that carry their enum's prefix: a bare word
			// such as ACTIVE could be anything in a sentence.
			if strings.HasPrefix(string(ev.Name()), screamingSnake(string(ed.Name()))+"_") {
				pairs = append(pairs, [2]string{string(ev.Name()), enumWord(ev)})
			}
		}
		return true
	})
	slices.SortFunc(pairs, func(a, b [2]string) int { return len(b[0]) - len(a[0]) })
	var args []string
	for _, p := range pairs {
		args = append(args, p[0], p[1])
	}
	return strings.NewReplacer(args...)
})

// plainWords replaces the enum value names in s by their words.
func plainWords(s string) string { return enumWords().Replace(s) }
