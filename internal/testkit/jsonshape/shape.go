package jsonshape

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Check compares actual with the sample document fixture by the rules of
// the package comment and returns one message per problem, in the order
// of the fixture's keys (sorted), or nil if actual has fixture's shape. A
// document that is not valid JSON is one problem.
func Check(fixture, actual []byte) []string {
	want, err := decode(fixture)
	if err != nil {
		return []string{"fixture: " + err.Error()}
	}
	got, err := decode(actual)
	if err != nil {
		return []string{"actual: " + err.Error()}
	}
	var c checker
	c.value("", want, got)
	return c.problems
}

// ForbidKeys returns one message per key of keys that actual, a JSON
// object, has at its top level, or a message saying it is not an object.
func ForbidKeys(actual []byte, keys ...string) []string {
	v, err := decode(actual)
	if err != nil {
		return []string{"actual: " + err.Error()}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return []string{fmt.Sprintf("(root): got %s, want object", typeName(v))}
	}
	var problems []string
	for _, k := range keys {
		if _, ok := obj[k]; ok {
			problems = append(problems, fmt.Sprintf("%s: present, must not be", join("", k)))
		}
	}
	return problems
}

// Numeric checks that every value at paths in actual is a number or a
// string that parses as one (what a client passing it to Python's float()
// accepts), and returns one message per other value, including a missing
// one. A path is keys joined by dots; a key followed by [] means every
// element of that array: "topologies[].uptimeSeconds". A missing array
// under [] counts as empty.
func Numeric(actual []byte, paths ...string) []string {
	return numericAt(actual, false, paths)
}

// NumericOrNull is Numeric accepting null too: a value the answer has no
// data for (a tuple count no worker reported), which the clients it
// serves read as 0.
func NumericOrNull(actual []byte, paths ...string) []string {
	return numericAt(actual, true, paths)
}

func numericAt(actual []byte, orNull bool, paths []string) []string {
	v, err := decode(actual)
	if err != nil {
		return []string{"actual: " + err.Error()}
	}
	var problems []string
	for _, p := range paths {
		problems = append(problems, numeric("", v, strings.Split(p, "."), orNull)...)
	}
	return problems
}

func numeric(path string, v any, segs []string, orNull bool) []string {
	if len(segs) == 0 {
		switch x := v.(type) {
		case nil:
			if orNull {
				return nil
			}
			return []string{fmt.Sprintf("%s: got null, want a number or a numeric string", rootName(path))}
		case json.Number:
			return nil
		case string:
			if _, err := strconv.ParseFloat(strings.TrimSpace(x), 64); err == nil {
				return nil
			}
			return []string{fmt.Sprintf("%s: %q is not numeric", rootName(path), x)}
		default:
			return []string{fmt.Sprintf("%s: got %s, want a number or a numeric string", rootName(path), typeName(v))}
		}
	}
	key, each := strings.CutSuffix(segs[0], "[]")
	obj, ok := v.(map[string]any)
	if !ok {
		return []string{fmt.Sprintf("%s: got %s, want object", rootName(path), typeName(v))}
	}
	child, ok := obj[key]
	path = join(path, key)
	if !ok {
		if each {
			return nil
		}
		return []string{path + ": missing"}
	}
	if !each {
		return numeric(path, child, segs[1:], orNull)
	}
	arr, ok := child.([]any)
	if !ok {
		return []string{fmt.Sprintf("%s: got %s, want array", path, typeName(child))}
	}
	var problems []string
	for i, el := range arr {
		problems = append(problems, numeric(fmt.Sprintf("%s[%d]", path, i), el, segs[1:], orNull)...)
	}
	return problems
}

type checker struct{ problems []string }

func (c *checker) addf(path, format string, args ...any) {
	c.problems = append(c.problems, rootName(path)+": "+fmt.Sprintf(format, args...))
}

func (c *checker) value(path string, want, got any) {
	if want == nil {
		return // null: anything goes
	}
	if typeName(want) != typeName(got) {
		c.addf(path, "got %s, want %s", typeName(got), typeName(want))
		return
	}
	switch w := want.(type) {
	case json.Number:
		if isInteger(w) && !isInteger(got.(json.Number)) {
			c.addf(path, "got %s, want an integer", got)
		}
	case []any:
		if len(w) == 0 {
			return
		}
		for i, el := range got.([]any) {
			c.value(fmt.Sprintf("%s[%d]", path, i), w[0], el)
		}
	case map[string]any:
		g := got.(map[string]any)
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			gv, ok := g[k]
			if !ok {
				c.addf(join(path, k), "missing")
				continue
			}
			c.value(join(path, k), w[k], gv)
		}
	}
}

// decode parses one JSON document, numbers as json.Number, and refuses
// trailing data.
func decode(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if d.More() {
		return nil, fmt.Errorf("invalid JSON: data after the document")
	}
	return v, nil
}

// typeName is v's JSON type.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "bool"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func isInteger(n json.Number) bool { return !strings.ContainsAny(string(n), ".eE") }

// join appends key to path: a plain identifier after a dot, anything else
// quoted in brackets.
func join(path, key string) string {
	if !plain(key) {
		return path + "[" + strconv.Quote(key) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

func plain(key string) bool {
	if key == "" {
		return false
	}
	for i, r := range key {
		if r == '_' || r == '-' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || i > 0 && '0' <= r && r <= '9' {
			continue
		}
		return false
	}
	return true
}

func rootName(path string) string {
	if path == "" {
		return "(root)"
	}
	return path
}
