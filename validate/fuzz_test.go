package validate

import (
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
)

// Fuzz targets for request validation. `go test` runs the seeds; run one
// for longer with: go test -run '^$' -fuzz FuzzValidateSpec ./validate

func FuzzValidateSpec(f *testing.F) {
	seeds := []*nimbusv1.TopologySpec{validSpec(), {}, {Name: "../x", NumWorkers: 1}}
	dup := validSpec()
	dup.Components[1].Id = dup.Components[0].Id
	seeds = append(seeds, dup)
	for _, s := range seeds {
		b, err := proto.Marshal(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte{0x0a, 0x02, '.', '.', 0x10, 0x01})

	f.Fuzz(func(t *testing.T, data []byte) {
		spec := &nimbusv1.TopologySpec{}
		if proto.Unmarshal(data, spec) != nil {
			t.Skip()
		}
		err := Spec(spec)
		if again := Spec(spec); errString(again) != errString(err) {
			t.Fatalf("not deterministic: %v, then %v", err, again)
		}
		if err != nil {
			var ve *Error
			if !errors.As(err, &ve) || !strings.HasPrefix(ve.Field, "spec.") {
				t.Fatalf("want a *Error for a spec field, got %v (%T)", err, err)
			}
			return
		}
		// Accepted: re-check the invariants the rest of nimbus relies on.
		name := spec.GetName()
		if filepath.Base(name) != name || name == ".." || name == "." || !filepath.IsLocal(name) || strings.ContainsAny(name, `/\`) {
			t.Fatalf("accepted name %q is not a safe path element", name)
		}
		if n := NumWorkers(spec); n < 1 || n > maxNumWorkers {
			t.Fatalf("accepted num_workers %d", n)
		}
		if len(spec.GetComponents()) == 0 {
			t.Fatal("accepted a spec without components")
		}
		ids := map[string]bool{}
		for i, c := range spec.GetComponents() {
			if p := c.GetParallelism(); p < 1 || p > maxParallelism {
				t.Fatalf("accepted components[%d].parallelism %d", i, p)
			}
			if ids[c.GetId()] {
				t.Fatalf("accepted duplicate component id %q", c.GetId())
			}
			ids[c.GetId()] = true
		}
		argv := spec.GetWorkerCommand()
		if len(argv) == 0 || argv[0] == "" {
			t.Fatalf("accepted worker_command %q", argv)
		}
		for i, arg := range argv {
			if strings.IndexByte(arg, 0) >= 0 {
				t.Fatalf("accepted NUL in worker_command[%d]", i)
			}
			checkOnlyKnownPlaceholders(t, arg)
		}
	})
}

func FuzzTopologyID(f *testing.F) {
	f.Add("wordcount", int64(1), int64(1400000000))
	f.Add("word-count-7", int64(0), int64(0))
	f.Add("a", int64(math.MaxInt64), int64(math.MaxInt64))
	f.Add("..", int64(1), int64(1))
	f.Fuzz(func(t *testing.T, name string, counter, secs int64) {
		if TopologyName("name", name) != nil || counter < 0 || secs < 0 {
			t.Skip()
		}
		id := NewTopologyID(name, counter, time.Unix(secs, 0))
		gotName, gotCounter, gotSecs, err := SplitTopologyID("topology_id", id)
		if err != nil {
			t.Fatalf("NewTopologyID(%q, %d, %d) = %q: %v", name, counter, secs, id, err)
		}
		if gotName != name || gotCounter != counter || gotSecs != secs {
			t.Fatalf("split(%q) = %q, %d, %d", id, gotName, gotCounter, gotSecs)
		}
	})
}

func FuzzValidateTopologyID(f *testing.F) {
	for _, s := range []string{"wordcount-1-1400000000", "a-1-2-3", "", "-", "--", "..-1-2", "a/b-1-2", "x-+1-2", "x-1-99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		name, _, _, err := SplitTopologyID("topology_id", s)
		if err != nil {
			return
		}
		// An accepted id is one safe path element, and so is its name.
		for _, p := range []string{s, name} {
			if filepath.Base(p) != p || !filepath.IsLocal(p) || strings.Contains(p, "..") {
				t.Fatalf("accepted id %q: %q is not a safe path element", s, p)
			}
		}
	})
}

func FuzzValidateCodeFileName(f *testing.F) {
	for _, s := range []string{"stormjar.jar", ".", "..", "a/b", "", "..."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if CodeFileName("file", s) != nil {
			return
		}
		if filepath.Base(s) != s || !filepath.IsLocal(s) || filepath.Join("/code", s) != "/code/"+s {
			t.Fatalf("accepted file name %q escapes its directory", s)
		}
	})
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
