package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/validate"
)

// A topology file (submit -f) describes a topology in a small YAML that
// takes Storm Flux's words where they fit:
//
//	name: wordcount                  # the topology's name
//	artifact: ../../bin/wordcount    # optional; relative to this file
//	workerCommand: "{code_dir}/artifact --port {port}"  # or a list: the argv
//	config:                          # the topology conf; values as written
//	  topology.workers: 2            # becomes the spec's num_workers
//	  topology.message.timeout.secs: 30
//	  topology.blobstore.map:        # a mapping, or its JSON text as Storm has it
//	    words: {localname: words.txt}
//	    model.tgz: {uncompress: true, workerRestart: true}
//	spouts:
//	  - id: sentence
//	    parallelism: 1               # 1 if not given, as in Flux
//	bolts:
//	  - id: split
//	    parallelism: 2
//
// Flux keys that mean nothing here (streams, className, ...) are refused by
// name, saying why, as is any other key: a key that was ignored would look
// honoured. Every error names the file, the line and the key.

// The keys of a topology file.
const (
	fileKeyName          = "name"
	fileKeyArtifact      = "artifact"
	fileKeyWorkerCommand = "workerCommand" // camel case, as Flux's own keys (className, constructorArgs)
	fileKeyConfig        = "config"
	fileKeySpouts        = "spouts"
	fileKeyBolts         = "bolts"
	fileKeyID            = "id"
	fileKeyParallelism   = "parallelism"

	// confWorkers is the conf key Storm takes the worker count from; the
	// spec carries it as num_workers.
	confWorkers = "topology.workers"
)

const (
	fileTopKeys       = "name, artifact, workerCommand, config, spouts and bolts"
	fileComponentKeys = "id and parallelism"
)

// Flux keys that have no meaning in Nimbus-HA, and why.
var (
	fluxTopKeys = map[string]string{
		"streams":        "a spec has no streams: the worker connects its components itself",
		"components":     "there are no Java objects to build: the worker command starts the worker",
		"includes":       "a topology file is one file",
		"topologySource": "there is no Java topology to load: the worker command starts the worker",
	}
	fluxComponentKeys = map[string]string{
		"className":       "the worker command starts the worker, which runs its components itself",
		"constructorArgs": "the worker command starts the worker, which builds its components itself",
		"properties":      "the worker command starts the worker, which configures its components itself",
		"configMethods":   "the worker command starts the worker, which configures its components itself",
	}
)

// fileSpec is a topology file read into a spec, with where each value
// came from.
type fileSpec struct {
	spec     *nimbusv1.TopologySpec // num_workers 0 and no worker command if the file has none
	artifact string                 // joined to the file's directory; "" if not given
	origins  origins
}

// origins maps a spec field, as package validate names it, to where its
// value was given: "FILE:LINE: KEY" or a flag. A validation error is
// reported at its origin.
type origins map[string]string

// set records where field (and everything under it) now comes from.
func (o origins) set(field, where string) {
	for f := range o {
		if f == field || strings.HasPrefix(f, field+"[") || strings.HasPrefix(f, field+".") {
			delete(o, f)
		}
	}
	o[field] = where
}

// of returns where field, or the nearest field above it, came from; the
// field itself if nothing is recorded.
func (o origins) of(field string) string {
	for f := field; f != ""; {
		if where, ok := o[f]; ok {
			return where
		}
		if strings.HasSuffix(f, "]") {
			f = f[:strings.LastIndexByte(f, '[')]
		} else if i := strings.LastIndexByte(f, '.'); i >= 0 {
			f = f[:i]
		} else {
			break
		}
	}
	return field
}

// checkSpec validates spec as the leader will, and reports a problem where
// the value was given.
func checkSpec(spec *nimbusv1.TopologySpec, o origins) error {
	err := validate.Spec(spec)
	var ve *validate.Error
	if errors.As(err, &ve) {
		return &usageError{fmt.Errorf("%s: %s", o.of(ve.Field), ve.Reason)}
	}
	return err
}

// fileParser reads one topology file.
type fileParser struct {
	path    string
	origins origins
}

// parseTopologyFile reads a topology file's contents; path names it in
// errors and is the directory a relative artifact is joined to.
func parseTopologyFile(path string, data []byte) (*fileSpec, error) {
	p := &fileParser{path: path, origins: origins{}}
	root, err := p.document(data)
	if err != nil {
		return nil, err
	}
	fs := &fileSpec{spec: &nimbusv1.TopologySpec{}, origins: p.origins}
	var spouts, bolts entry
	seen := map[string]int{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], resolve(root.Content[i+1])
		key, err := p.key(k, "", seen)
		if err != nil {
			return nil, err
		}
		switch key {
		case fileKeyName:
			fs.spec.Name, err = p.scalar(v, key)
			p.origins["spec.name"] = p.at(v, key)
		case fileKeyArtifact:
			fs.artifact, err = p.artifact(v)
		case fileKeyWorkerCommand:
			fs.spec.WorkerCommand, err = p.workerCommand(k, v)
		case fileKeyConfig:
			fs.spec.NumWorkers, fs.spec.Config, err = p.config(k, v)
		case fileKeySpouts:
			spouts = entry{k, v}
		case fileKeyBolts:
			bolts = entry{k, v}
		default:
			err = p.unknown(k, key, fluxTopKeys, fileTopKeys)
		}
		if err != nil {
			return nil, err
		}
	}
	// Spouts first, then bolts, whatever the order in the file.
	if fs.spec.Components, err = p.components(spouts, bolts); err != nil {
		return nil, err
	}
	return fs, nil
}

// document parses data as exactly one YAML document whose root is a
// mapping, and returns the mapping.
func (p *fileParser) document(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	switch err := dec.Decode(&doc); {
	case errors.Is(err, io.EOF):
		return nil, fmt.Errorf("%s: empty: a topology file has at least a name and a spout or bolt", p.path)
	case err != nil:
		return nil, p.syntaxError(err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		return nil, fmt.Errorf("%s:%d: a second YAML document: a topology file has one", p.path, next.Line)
	case !errors.Is(err, io.EOF):
		return nil, p.syntaxError(err)
	}
	root := resolve(&doc)
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = resolve(root.Content[0])
	}
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d: want a mapping of %s, got %s", p.path, root.Line, fileTopKeys, kindOf(root))
	}
	return root, nil
}

// yamlLine is the yaml library's "yaml: line N: ..." error.
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntaxError puts a YAML syntax error in the file:line form of the others.
func (p *fileParser) syntaxError(err error) error {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("%s:%s: %s", p.path, m[1], m[2])
	}
	return fmt.Errorf("%s: %s", p.path, strings.TrimPrefix(msg, "yaml: "))
}

// at is where n is: "FILE:LINE: FIELD".
func (p *fileParser) at(n *yaml.Node, field string) string {
	return fmt.Sprintf("%s:%d: %s", p.path, n.Line, field)
}

func (p *fileParser) errorf(n *yaml.Node, field, format string, args ...any) error {
	return fmt.Errorf("%s: %s", p.at(n, field), fmt.Sprintf(format, args...))
}

// key reads a mapping key under parent ("" for the top), refusing a key
// given twice.
func (p *fileParser) key(k *yaml.Node, parent string, seen map[string]int) (string, error) {
	if k.Kind != yaml.ScalarNode {
		return "", p.errorf(k, parent+"?", "want a key, got %s", kindOf(k))
	}
	field := k.Value
	if parent != "" {
		field = parent + "." + k.Value
	}
	if line, dup := seen[k.Value]; dup {
		return "", p.errorf(k, field, "given twice (first on line %d)", line)
	}
	seen[k.Value] = k.Line
	return k.Value, nil
}

// unknown refuses a key: a Flux key with why it means nothing here, any
// other naming the keys there are.
func (p *fileParser) unknown(k *yaml.Node, field string, flux map[string]string, known string) error {
	if why, ok := flux[k.Value]; ok {
		return p.errorf(k, field, "a Flux key that Nimbus-HA does not use: %s; remove it", why)
	}
	return p.errorf(k, field, "unknown key: the keys here are %s", known)
}

// scalar reads a single value, as written.
func (p *fileParser) scalar(n *yaml.Node, field string) (string, error) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
		return "", p.errorf(n, field, "want a single value, got %s", kindOf(n))
	}
	return n.Value, nil
}

// int32 reads a whole number of at least lo.
func (p *fileParser) int32(n *yaml.Node, field string, lo int) (int32, error) {
	s, err := p.scalar(n, field)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil || v < int64(lo) {
		return 0, p.errorf(n, field, "want a whole number from %d to %d, got %q", lo, math.MaxInt32, s)
	}
	return int32(v), nil
}

// artifact reads the artifact's path; a relative one is relative to the
// file, so the file means the same from any working directory.
func (p *fileParser) artifact(n *yaml.Node) (string, error) {
	s, err := p.scalar(n, fileKeyArtifact)
	if err != nil {
		return "", err
	}
	if s == "" {
		return "", p.errorf(n, fileKeyArtifact, "empty path")
	}
	if !filepath.IsAbs(s) {
		s = filepath.Join(filepath.Dir(p.path), s)
	}
	return s, nil
}

// workerCommand reads the worker command, the value n of key k: a string
// split as --worker-command is, or a list that is the argv itself.
func (p *fileParser) workerCommand(k, n *yaml.Node) ([]string, error) {
	const key = fileKeyWorkerCommand
	var argv []string
	if n.Kind == yaml.SequenceNode {
		for i, e := range n.Content {
			field := fmt.Sprintf("%s[%d]", key, i)
			arg, err := p.scalar(resolve(e), field)
			if err != nil {
				return nil, err
			}
			argv = append(argv, arg)
			p.origins[fmt.Sprintf("spec.worker_command[%d]", i)] = p.at(e, field)
		}
	} else {
		s, err := p.scalar(n, key)
		if err != nil {
			return nil, p.errorf(k, key, "want a command line or a list of arguments, got %s", kindOf(n))
		}
		if argv, err = splitCommand(s); err != nil {
			return nil, p.errorf(k, key, "%q: %v", s, err)
		}
	}
	if len(argv) == 0 {
		return nil, p.errorf(k, key, "empty command")
	}
	p.origins["spec.worker_command"] = p.at(k, key)
	return argv, nil
}

// config reads the topology conf, the value n of key k. Values are kept
// as written, since a spec's conf is strings; topology.workers becomes the
// worker count (0 if not given) and is not kept in the conf, so the two
// cannot differ.
func (p *fileParser) config(k, n *yaml.Node) (int32, map[string]string, error) {
	if n.ShortTag() == "!!null" {
		return 0, nil, nil
	}
	if n.Kind != yaml.MappingNode {
		return 0, nil, p.errorf(k, fileKeyConfig, "want a mapping of conf keys to values, got %s", kindOf(n))
	}
	p.origins["spec.config"] = p.at(k, fileKeyConfig)
	var workers int32
	conf := map[string]string{}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		ck, v := n.Content[i], resolve(n.Content[i+1])
		key, err := p.key(ck, fileKeyConfig, seen)
		if err != nil {
			return 0, nil, err
		}
		field := fileKeyConfig + "." + key
		if key == confWorkers {
			if workers, err = p.int32(v, field, 1); err != nil {
				return 0, nil, err
			}
			p.origins["spec.num_workers"] = p.at(v, field)
			continue
		}
		if key == validate.TopologyBlobstoreMap && v.Kind == yaml.MappingNode {
			if conf[key], err = p.jsonText(v, field); err != nil {
				return 0, nil, err
			}
			p.origins["spec.config["+strconv.Quote(key)+"]"] = p.at(v, field)
			continue
		}
		if conf[key], err = p.scalar(v, field); err != nil {
			return 0, nil, p.errorf(v, field, "want a single value (a conf value is a string), got %s", kindOf(v))
		}
		p.origins["spec.config["+strconv.Quote(key)+"]"] = p.at(v, field)
	}
	if len(conf) == 0 {
		conf = nil
	}
	return workers, conf, nil
}

// jsonText renders n, a mapping written as YAML, as the JSON text a conf
// value that Storm reads as JSON holds (topology.blobstore.map): the
// leader checks the value, and checkSpec reports its problems at n.
func (p *fileParser) jsonText(n *yaml.Node, field string) (string, error) {
	v, err := p.jsonValue(n, field)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", p.errorf(n, field, "%v", err)
	}
	return string(b), nil
}

// jsonValue is n as encoding/json writes it: mappings as objects (their
// keys as written), lists as arrays, scalars by their YAML type.
func (p *fileParser) jsonValue(n *yaml.Node, field string) (any, error) {
	n = resolve(n)
	switch n.Kind {
	case yaml.MappingNode:
		obj := map[string]any{}
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, err := p.key(n.Content[i], field, seen)
			if err != nil {
				return nil, err
			}
			if obj[key], err = p.jsonValue(n.Content[i+1], field+"."+key); err != nil {
				return nil, err
			}
		}
		return obj, nil
	case yaml.SequenceNode:
		list := make([]any, 0, len(n.Content))
		for i, e := range n.Content {
			v, err := p.jsonValue(e, fmt.Sprintf("%s[%d]", field, i))
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
		return list, nil
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			return n.Value, nil
		case "!!null", "!!bool", "!!int", "!!float":
			var v any
			if err := n.Decode(&v); err != nil {
				return nil, p.errorf(n, field, "%v", err)
			}
			return v, nil
		}
		return n.Value, nil
	}
	return nil, p.errorf(n, field, "want a value, got %s", kindOf(n))
}

// entry is a key of a mapping and its value.
type entry struct{ key, val *yaml.Node }

// components reads the spouts, then the bolts (zero entries if absent),
// into the spec's components.
func (p *fileParser) components(spouts, bolts entry) ([]*nimbusv1.ComponentSpec, error) {
	var out []*nimbusv1.ComponentSpec
	ids := map[string]string{} // id -> where it was declared
	kinds := []nimbusv1.ComponentKind{nimbusv1.ComponentKind_COMPONENT_KIND_SPOUT, nimbusv1.ComponentKind_COMPONENT_KIND_BOLT}
	for li, list := range []entry{spouts, bolts} {
		k, n := list.key, list.val
		if k == nil || n.ShortTag() == "!!null" {
			continue
		}
		if n.Kind != yaml.SequenceNode {
			return nil, p.errorf(k, k.Value, "want a list of components (- id: ...), got %s", kindOf(n))
		}
		for i, e := range n.Content {
			c, err := p.component(resolve(e), fmt.Sprintf("%s[%d]", k.Value, i), len(out), ids)
			if err != nil {
				return nil, err
			}
			c.Kind = kinds[li]
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: %s, %s: none: a topology has at least one spout or bolt", p.path, fileKeySpouts, fileKeyBolts)
	}
	return out, nil
}

// component reads one spout or bolt, the index-th component of the spec.
func (p *fileParser) component(n *yaml.Node, field string, index int, ids map[string]string) (*nimbusv1.ComponentSpec, error) {
	if n.Kind != yaml.MappingNode {
		return nil, p.errorf(n, field, "want a mapping of %s, got %s", fileComponentKeys, kindOf(n))
	}
	spec := fmt.Sprintf("spec.components[%d]", index)
	p.origins[spec] = p.at(n, field)
	c := &nimbusv1.ComponentSpec{Parallelism: 1} // Flux's default
	var idNode *yaml.Node
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], resolve(n.Content[i+1])
		key, err := p.key(k, field, seen)
		if err != nil {
			return nil, err
		}
		switch key {
		case fileKeyID:
			idNode = v
			c.Id, err = p.scalar(v, field+".id")
			p.origins[spec+".id"] = p.at(v, field+".id")
		case fileKeyParallelism:
			c.Parallelism, err = p.int32(v, field+".parallelism", 1)
			p.origins[spec+".parallelism"] = p.at(v, field+".parallelism")
		default:
			err = p.unknown(k, field+"."+key, fluxComponentKeys, fileComponentKeys)
		}
		if err != nil {
			return nil, err
		}
	}
	if idNode == nil {
		return nil, p.errorf(n, field+".id", "missing")
	}
	if first, dup := ids[c.Id]; dup {
		return nil, p.errorf(idNode, field+".id", "%q is also %s: ids are unique among spouts and bolts", c.Id, first)
	}
	ids[c.Id] = fmt.Sprintf("%s.id (line %d)", field, idNode.Line)
	return c, nil
}

// resolve follows an alias (*name) to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// kindOf says what a node is, for errors.
func kindOf(n *yaml.Node) string {
	switch {
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.ShortTag() == "!!null":
		return "nothing"
	case n.Kind == yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	}
	return "something else"
}
