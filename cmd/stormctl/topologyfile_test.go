package main

import (
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// parse parses a topology file's text, named dir/t.yaml.
func parse(t *testing.T, text string) (*fileSpec, error) {
	t.Helper()
	return parseTopologyFile(filepath.Join("dir", "t.yaml"), []byte(text))
}

func TestParseTopologyFile(t *testing.T) {
	fs, err := parse(t, `
# a comment
name: wordcount
artifact: bin/wordcount
workerCommand: "java -jar '{code_dir}/app.jar' --port {port}"
config:
  topology.workers: 3
  topology.debug: true
  topology.message.timeout.secs: 30
  topology.environment: "LANG=C, TZ=UTC"
  opts: -Da=b -Dc=d
  empty: ""
bolts:                 # before the spouts: the spouts still come first
  - id: split
    parallelism: 2
  - id: count          # parallelism 1, as in Flux
spouts:
  - id: sentence
    parallelism: 4
`)
	if err != nil {
		t.Fatal(err)
	}
	want := &nimbusv1.TopologySpec{
		Name:       "wordcount",
		NumWorkers: 3,
		Components: []*nimbusv1.ComponentSpec{
			{Id: "sentence", Parallelism: 4, Kind: spout}, {Id: "split", Parallelism: 2, Kind: bolt}, {Id: "count", Parallelism: 1, Kind: bolt},
		},
		WorkerCommand: []string{"java", "-jar", "{code_dir}/app.jar", "--port", "{port}"},
		Config: map[string]string{
			"topology.debug": "true", "topology.message.timeout.secs": "30",
			"topology.environment": "LANG=C, TZ=UTC", "opts": "-Da=b -Dc=d", "empty": "",
		},
	}
	if !proto.Equal(fs.spec, want) {
		t.Errorf("spec:\n got %v\nwant %v", fs.spec, want)
	}
	if want := filepath.Join("dir", "bin", "wordcount"); fs.artifact != want {
		t.Errorf("artifact %q, want %q (relative to the file)", fs.artifact, want)
	}
	for field, want := range map[string]string{
		"spec.name":                         "dir/t.yaml:3: name",
		"spec.num_workers":                  "dir/t.yaml:7: config.topology.workers",
		`spec.config["opts"]`:               "dir/t.yaml:11: config.opts",
		"spec.worker_command":               "dir/t.yaml:5: workerCommand",
		"spec.worker_command[2]":            "dir/t.yaml:5: workerCommand", // a string has one line
		"spec.components[0].parallelism":    "dir/t.yaml:19: spouts[0].parallelism",
		"spec.components[1].id":             "dir/t.yaml:14: bolts[0].id",
		"spec.components[2].parallelism":    "dir/t.yaml:16: bolts[1]", // not given: the component
		`spec.config["a very long key..."]`: "dir/t.yaml:6: config",
		"spec.owner":                        "spec.owner", // not in a file
	} {
		if got := fs.origins.of(field); got != want {
			t.Errorf("origin of %s: %q, want %q", field, got, want)
		}
	}
}

func TestParseTopologyFileForms(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       *nimbusv1.TopologySpec
		artifact   string
	}{
		{
			name: "minimal: no workers, command or config",
			text: "name: w\nspouts:\n  - id: s\n",
			want: &nimbusv1.TopologySpec{Name: "w", Components: []*nimbusv1.ComponentSpec{{Id: "s", Parallelism: 1, Kind: spout}}},
		},
		{
			name: "the command as a list, the argv as is",
			text: "name: w\nworkerCommand:\n  - '{code_dir}/run'\n  - --name\n  - word count\n  - 7\nbolts: [{id: b, parallelism: 2}]\n",
			want: &nimbusv1.TopologySpec{
				Name: "w", Components: []*nimbusv1.ComponentSpec{{Id: "b", Parallelism: 2, Kind: bolt}},
				WorkerCommand: []string{"{code_dir}/run", "--name", "word count", "7"},
			},
		},
		{
			name: "an absolute artifact, empty lists, null config, an alias",
			text: "name: w\nartifact: /opt/w.bin\nconfig:\nbolts: []\nspouts:\n  - id: s\n    parallelism: &p 5\n  - id: t\n    parallelism: *p\n",
			want: &nimbusv1.TopologySpec{
				Name: "w", Components: []*nimbusv1.ComponentSpec{{Id: "s", Parallelism: 5, Kind: spout}, {Id: "t", Parallelism: 5, Kind: spout}},
			},
			artifact: "/opt/w.bin",
		},
		{
			name: "numbers and booleans as written, quoted or not",
			text: "name: 42\nconfig:\n  a: 0x10\n  b: yes\n  c: '007'\n  d: 1.50\nspouts: [{id: s}]\n",
			want: &nimbusv1.TopologySpec{
				Name: "42", Components: []*nimbusv1.ComponentSpec{{Id: "s", Parallelism: 1, Kind: spout}},
				Config: map[string]string{"a": "0x10", "b": "yes", "c": "007", "d": "1.50"},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, err := parse(t, tc.text)
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(fs.spec, tc.want) {
				t.Errorf("spec:\n got %v\nwant %v", fs.spec, tc.want)
			}
			if fs.artifact != tc.artifact {
				t.Errorf("artifact %q, want %q", fs.artifact, tc.artifact)
			}
		})
	}
}

func TestParseTopologyFileErrors(t *testing.T) {
	const head = "name: w\n" // line 1
	const spout = "spouts:\n  - id: s\n"
	for _, tc := range []struct {
		name, text string
		want       string // the whole error
	}{
		{"empty", "", "dir/t.yaml: empty: a topology file has at least a name and a spout or bolt"},
		{"only comments", "# nothing\n", "dir/t.yaml: empty: a topology file has at least a name and a spout or bolt"},
		{"syntax", head + "spouts:\n  - id: s\n parallelism: 2\n", "dir/t.yaml:3: did not find expected key"},
		{"tab", head + "spouts:\n\t- id: s\n", "dir/t.yaml:3: found character that cannot start any token"},
		{"a list", "- name: w\n", "dir/t.yaml:1: want a mapping of name, artifact, workerCommand, config, spouts and bolts, got a list"},
		{"two documents", head + spout + "---\nname: v\n", "dir/t.yaml:4: a second YAML document: a topology file has one"},
		{"unknown key", head + "nmae: v\n" + spout,
			"dir/t.yaml:2: nmae: unknown key: the keys here are name, artifact, workerCommand, config, spouts and bolts"},
		{"streams", head + spout + "streams:\n  - from: s\n    to: b\n",
			"dir/t.yaml:4: streams: a Flux key that Nimbus-HA does not use: a spec has no streams: the worker connects its components itself; remove it"},
		{"includes", "includes: []\n" + head + spout,
			"dir/t.yaml:1: includes: a Flux key that Nimbus-HA does not use: a topology file is one file; remove it"},
		{"className", head + spout + "    className: org.example.Spout\n",
			"dir/t.yaml:4: spouts[0].className: a Flux key that Nimbus-HA does not use: the worker command starts the worker, which runs its components itself; remove it"},
		{"unknown component key", head + spout + "    paralelism: 2\n",
			"dir/t.yaml:4: spouts[0].paralelism: unknown key: the keys here are id and parallelism"},
		{"name twice", head + spout + "name: v\n", "dir/t.yaml:4: name: given twice (first on line 1)"},
		{"config key twice", head + spout + "config:\n  a: 1\n  a: 2\n", "dir/t.yaml:6: config.a: given twice (first on line 5)"},
		{"component key twice", head + spout + "    id: t\n", "dir/t.yaml:4: spouts[0].id: given twice (first on line 3)"},
		{"name a list", "name: [a, b]\n" + spout, `dir/t.yaml:1: name: want a single value, got a list`},
		{"name nothing", "name:\n" + spout, `dir/t.yaml:1: name: want a single value, got nothing`},
		{"parallelism a word", head + spout + "    parallelism: two\n",
			`dir/t.yaml:4: spouts[0].parallelism: want a whole number from 1 to 2147483647, got "two"`},
		{"parallelism 0", head + spout + "    parallelism: 0\n",
			`dir/t.yaml:4: spouts[0].parallelism: want a whole number from 1 to 2147483647, got "0"`},
		{"parallelism -1", head + "bolts:\n  - id: b\n  - id: c\n    parallelism: -1\n",
			`dir/t.yaml:5: bolts[1].parallelism: want a whole number from 1 to 2147483647, got "-1"`},
		{"parallelism over int32", head + spout + "    parallelism: 2147483648\n",
			`dir/t.yaml:4: spouts[0].parallelism: want a whole number from 1 to 2147483647, got "2147483648"`},
		{"parallelism a float", head + spout + "    parallelism: 1.5\n",
			`dir/t.yaml:4: spouts[0].parallelism: want a whole number from 1 to 2147483647, got "1.5"`},
		{"workers a word", head + spout + "config:\n  topology.workers: abc\n",
			`dir/t.yaml:5: config.topology.workers: want a whole number from 1 to 2147483647, got "abc"`},
		{"workers 0", head + spout + "config:\n  topology.workers: 0\n",
			`dir/t.yaml:5: config.topology.workers: want a whole number from 1 to 2147483647, got "0"`},
		{"config value a list", head + spout + "config:\n  topology.kryo.register: [a, b]\n",
			`dir/t.yaml:5: config.topology.kryo.register: want a single value (a conf value is a string), got a list`},
		{"config value nothing", head + spout + "config:\n  topology.debug:\n",
			`dir/t.yaml:5: config.topology.debug: want a single value (a conf value is a string), got nothing`},
		{"config a list", head + spout + "config: [a]\n", `dir/t.yaml:4: config: want a mapping of conf keys to values, got a list`},
		{"spouts a mapping", head + "spouts:\n  s: 1\n", `dir/t.yaml:2: spouts: want a list of components (- id: ...), got a mapping`},
		{"component a word", head + "spouts:\n  - sentence\n", `dir/t.yaml:3: spouts[0]: want a mapping of id and parallelism, got "sentence"`},
		{"no id", head + "bolts:\n  - parallelism: 2\n", "dir/t.yaml:3: bolts[0].id: missing"},
		{"id twice", head + spout + "bolts:\n  - id: b\n  - id: s\n",
			`dir/t.yaml:6: bolts[1].id: "s" is also spouts[0].id (line 3): ids are unique among spouts and bolts`},
		{"no components", head + "spouts: []\n", "dir/t.yaml: spouts, bolts: none: a topology has at least one spout or bolt"},
		{"no components at all", head, "dir/t.yaml: spouts, bolts: none: a topology has at least one spout or bolt"},
		{"command unterminated", head + spout + "workerCommand: \"run 'x\"\n", `dir/t.yaml:4: workerCommand: "run 'x": unterminated single quote`},
		{"command empty", head + spout + "workerCommand: ' '\n", "dir/t.yaml:4: workerCommand: empty command"},
		{"command empty list", head + spout + "workerCommand: []\n", "dir/t.yaml:4: workerCommand: empty command"},
		{"command a mapping", head + spout + "workerCommand: {a: b}\n",
			"dir/t.yaml:4: workerCommand: want a command line or a list of arguments, got a mapping"},
		{"command list of lists", head + spout + "workerCommand:\n  - run\n  - [a]\n", "dir/t.yaml:6: workerCommand[1]: want a single value, got a list"},
		{"artifact empty", head + spout + "artifact: ''\n", "dir/t.yaml:4: artifact: empty path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, err := parse(t, tc.text)
			if err == nil {
				t.Fatalf("accepted: %v", fs.spec)
			}
			if err.Error() != tc.want {
				t.Errorf("error:\n got %s\nwant %s", err, tc.want)
			}
		})
	}
}

func TestOrigins(t *testing.T) {
	o := origins{}
	o["spec.worker_command"] = "f:3: workerCommand"
	o["spec.worker_command[1]"] = "f:5: workerCommand[1]"
	o["spec.components[0].parallelism"] = "f:9: spouts[0].parallelism"
	for field, want := range map[string]string{
		"spec.worker_command[1]":         "f:5: workerCommand[1]",
		"spec.worker_command[2]":         "f:3: workerCommand",
		"spec.worker_command":            "f:3: workerCommand",
		"spec.components[0].parallelism": "f:9: spouts[0].parallelism",
		"spec.components[0].id":          "spec.components[0].id",
		`spec.config["a.b[c"]`:           `spec.config["a.b[c"]`,
	} {
		if got := o.of(field); got != want {
			t.Errorf("of(%s) = %q, want %q", field, got, want)
		}
	}
	// A flag replacing the command replaces what the file said of its
	// elements too.
	o.set("spec.worker_command", "--worker-command")
	if got := o.of("spec.worker_command[1]"); got != "--worker-command" {
		t.Errorf("after set, of(spec.worker_command[1]) = %q", got)
	}
	if !strings.HasPrefix(o.of("spec.components[0].parallelism"), "f:9") {
		t.Error("set dropped an unrelated field")
	}
}
