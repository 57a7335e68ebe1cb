package configs

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// maxNestedDots bounds how deep readFile looks into a nested map for a key
// written as nested YAML: no key has more dots than this.
const maxNestedDots = 6

// fileSettings is what a YAML file sets, as far as viper cannot say: the
// line of each known key it gives a value, the keys that look like typos of
// known keys or are set twice (errors), and the other keys nobody reads
// (warnings). body is the file as read, which viper parses for the values,
// so that both passes see the same bytes.
type fileSettings struct {
	body     []byte
	values   map[string]setting // by the field's key
	typos    []error
	warnings []string
}

// setting is where the file sets one key.
type setting struct {
	src Source
}

// readFile reads the YAML at path. Values are decoded as a whole (so merge
// keys and anchors work as in any YAML reader); the node tree only says
// on which line each key is.
func readFile(path string) (*fileSettings, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("configs: %w", err) // names the file
	}
	var doc yaml.Node
	var m map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("configs: parse %s: %w", path, err)
	}
	if doc.Kind != 0 { // 0: an empty file
		if err := doc.Decode(&m); err != nil {
			return nil, fmt.Errorf("configs: parse %s: %w", path, err)
		}
	}
	keyNodes, valueNodes := topLevel(&doc)
	at := func(n *yaml.Node) Source {
		src := Source{Kind: FromFile, Name: path}
		if n != nil {
			src.Line = n.Line
		}
		return src
	}

	fsets := &fileSettings{body: b, values: map[string]setting{}}
	// In the file's order, so that reports read top to bottom.
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool {
		li, lj := at(keyNodes[names[i]]).Line, at(keyNodes[names[j]]).Line
		return li < lj || li == lj && names[i] < names[j]
	})
	type spelling struct {
		key  string
		line int
	}
	written := map[string]spelling{} // by the field's key
	for _, k := range names {
		src := at(keyNodes[k])
		if f, ok := lookupField(k); ok {
			// viper reads keys without regard to case, and of two
			// spellings of one key it keeps either: the file must
			// say which it means.
			if prev, twice := written[f.key]; twice {
				fsets.typos = append(fsets.typos, &KeyError{Key: k, Source: src,
					Err: fmt.Errorf("set again (also as %s at line %d); keys are read without regard to case, keep one", prev.key, prev.line)})
				continue
			}
			written[f.key] = spelling{k, src.Line}
			// A null is no value, as in Storm's own files
			// (storm.zookeeper.auth.user: null): the default stays.
			if m[k] != nil {
				fsets.values[f.key] = setting{src: src}
			}
			continue
		}
		if typos := typosIn(k, src, valueNodes[k], at); len(typos) > 0 {
			fsets.typos = append(fsets.typos, typos...)
			continue
		}
		fsets.warnings = append(fsets.warnings, fmt.Sprintf("configs: %s: unknown key %q ignored", src, k))
	}
	return fsets, nil
}

// topLevel indexes the key and value nodes of the document's top-level
// mapping by key. A key written twice (in any case) is an error that the
// decode reports; here the last one wins, as there.
func topLevel(doc *yaml.Node) (keys, values map[string]*yaml.Node) {
	keys, values = map[string]*yaml.Node{}, map[string]*yaml.Node{}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return keys, values
	}
	pairs := doc.Content[0].Content
	for i := 0; i+1 < len(pairs); i += 2 {
		keys[pairs[i].Value], values[pairs[i].Value] = pairs[i], pairs[i+1]
	}
	return keys, values
}

// typosIn returns an error for the unknown top-level key k if it is close
// to a known key, or, when its value is a map, for each nested key whose
// dotted path is, or is close to, a known key (nimbus: {grpc: {port: 1}}
// means nimbus.grpc.port, which a flat Storm file must spell out).
func typosIn(k string, src Source, value *yaml.Node, at func(*yaml.Node) Source) []error {
	keys := Keys()
	if s := Closest(k, keys); s != "" {
		return []error{&KeyError{Key: k, Source: src, Err: fmt.Errorf("unknown key; did you mean %s?", s)}}
	}
	var errs []error
	var walk func(prefix string, n *yaml.Node)
	walk = func(prefix string, n *yaml.Node) {
		if n == nil || n.Kind != yaml.MappingNode || strings.Count(prefix, ".") >= maxNestedDots {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			path := prefix + "." + n.Content[i].Value
			f, known := lookupField(path)
			near := Closest(path, keys)
			switch {
			case known:
				errs = append(errs, &KeyError{Key: path, Source: at(n.Content[i]),
					Err: fmt.Errorf("written as nested keys, which are not read; write %s as one key at the top level", f.key)})
			case near != "":
				errs = append(errs, &KeyError{Key: path, Source: at(n.Content[i]),
					Err: fmt.Errorf("unknown key, written nested; did you mean %s, as one key at the top level?", near)})
			default:
				walk(path, n.Content[i+1])
			}
		}
	}
	walk(k, value)
	return errs
}

// unknownEnv returns an error for each STORM_* variable in environ that
// names no key but is close to a variable that does: a typo, which would
// otherwise leave the key at its default without a word. Other STORM_*
// variables are not ours to judge (Storm's scripts set STORM_HOME,
// STORM_CONF_DIR; supervisors give workers STORM_PORT) and pass silently.
// Empty values are ignored, as they are for known variables.
func unknownEnv(environ []string) []error {
	known := map[string]string{} // variable -> key
	names := make([]string, 0, len(fields))
	for _, f := range fields {
		known[EnvName(f.key)] = f.key
		names = append(names, EnvName(f.key))
	}
	var errs []error
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, envPrefix) || value == "" || known[name] != "" {
			continue
		}
		if s := Closest(name, names); s != "" {
			errs = append(errs, &KeyError{Key: name, Source: Source{Kind: FromEnv, Name: name},
				Err: fmt.Errorf("unknown variable; did you mean %s (%s)?", s, known[s])})
		}
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].(*KeyError).Key < errs[j].(*KeyError).Key })
	return errs
}
