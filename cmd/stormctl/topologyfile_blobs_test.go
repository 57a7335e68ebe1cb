package main

import (
	"testing"

	"github.com/nimbusha/nimbus/validate"
)

func TestTopologyFileBlobstoreMap(t *testing.T) {
	const head = "name: t\nspouts:\n  - id: s\nconfig:\n"
	for _, tc := range []struct {
		name, text, want string
	}{
		{"a YAML mapping", head + `  topology.blobstore.map:
    words:
      localname: words.txt
    model.tgz: {uncompress: true, workerRestart: true}
    "123": {}
`, `{"123":{},"model.tgz":{"uncompress":true,"workerRestart":true},"words":{"localname":"words.txt"}}`},
		{"Storm's JSON text, kept as written", head + `  topology.blobstore.map: '{"words": {"localname": "w"}}'` + "\n",
			`{"words": {"localname": "w"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, err := parse(t, tc.text)
			if err != nil {
				t.Fatal(err)
			}
			if got := fs.spec.GetConfig()[validate.TopologyBlobstoreMap]; got != tc.want {
				t.Errorf("conf value %s, want %s", got, tc.want)
			}
			fs.spec.WorkerCommand = []string{"{code_dir}/artifact"}
			fs.spec.NumWorkers = 1
			if err := checkSpec(fs.spec, fs.origins); err != nil {
				t.Errorf("checkSpec: %v", err)
			}
		})
	}
}

func TestTopologyFileBlobstoreMapErrors(t *testing.T) {
	const head = "name: t\nspouts:\n  - id: s\nconfig:\n  topology.blobstore.map:\n"
	for _, tc := range []struct {
		name, text, want string
	}{
		{"a key twice", head + "    a: {}\n    a: {}\n", "dir/t.yaml:7: config.topology.blobstore.map.a: given twice (first on line 6)"},
		{"a field Storm does not have", head + "    words: {uncompres: true}\n",
			`dir/t.yaml:6: config.topology.blobstore.map: value["words"]: must be {"localname": "NAME", "uncompress": BOOL, "workerRestart": BOOL}: unknown field "uncompres"`},
		{"a key with a path", head + "    a/b: {}\n",
			`dir/t.yaml:6: config.topology.blobstore.map: value["a/b"]: must be 1-200 bytes`},
		{"a localname with a path", head + "    words: {localname: ../w}\n",
			`dir/t.yaml:6: config.topology.blobstore.map: value["words"].localname: `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, err := parse(t, tc.text)
			if err == nil {
				fs.spec.WorkerCommand = []string{"{code_dir}/artifact"}
				fs.spec.NumWorkers = 1
				err = checkSpec(fs.spec, fs.origins)
			}
			if err == nil {
				t.Fatalf("accepted: %v", fs.spec)
			}
			if got := err.Error(); len(got) < len(tc.want) || got[:len(tc.want)] != tc.want {
				t.Errorf("error:\n got %s\nwant %s...", got, tc.want)
			}
		})
	}
}
