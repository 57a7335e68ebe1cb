package jsonshape

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	const fixture = `{
		"stormVersion": "2.6.0",
		"supervisors": 1,
		"totalMem": 4096.0,
		"user": null,
		"debug": false,
		"stats": {"window": "600", "acked": 0},
		"topologies": [{"id": "wc-1-1", "uptimeSeconds": 365, "errorPort": null}],
		"conf": {"topology.workers": 1},
		"empty": []
	}`
	good := `{
		"stormVersion": "2.7.1", "supervisors": 3, "totalMem": 0, "user": "alice", "debug": true,
		"stats": {"window": ":all-time", "acked": 12, "extra": "fine"},
		"topologies": [{"id": "a", "uptimeSeconds": 1, "errorPort": 6700}, {"id": "b", "uptimeSeconds": 2, "errorPort": null}],
		"conf": {"topology.workers": 3},
		"empty": [1, "two", null],
		"nimbusHaExtra": {"anything": true}
	}`
	for _, tc := range []struct {
		name, actual string
		want         []string
	}{
		{"matches", good, nil},
		{"empty arrays pass", strings.Replace(good, `"topologies": [{"id": "a", "uptimeSeconds": 1, "errorPort": 6700}, {"id": "b", "uptimeSeconds": 2, "errorPort": null}]`, `"topologies": []`, 1), nil},
		{"a fraction-written number takes an integer", strings.Replace(good, `"totalMem": 0`, `"totalMem": 12.5`, 1), nil},
		{"missing top-level key", strings.Replace(good, `"supervisors": 3,`, ``, 1), []string{"supervisors: missing"}},
		{"missing key in an element", strings.Replace(good, `{"id": "b", "uptimeSeconds": 2, `, `{"id": "b", `, 1), []string{"topologies[1].uptimeSeconds: missing"}},
		{"string for number", strings.Replace(good, `"uptimeSeconds": 1,`, `"uptimeSeconds": "1",`, 1), []string{"topologies[0].uptimeSeconds: got string, want number"}},
		{"fraction for integer", strings.Replace(good, `"supervisors": 3`, `"supervisors": 3.5`, 1), []string{"supervisors: got 3.5, want an integer"}},
		{"null for string", strings.Replace(good, `"stormVersion": "2.7.1"`, `"stormVersion": null`, 1), []string{"stormVersion: got null, want string"}},
		{"number for bool", strings.Replace(good, `"debug": true`, `"debug": 1`, 1), []string{"debug: got number, want bool"}},
		{"object for array", strings.Replace(good, `"empty": [1, "two", null]`, `"empty": {}`, 1), []string{"empty: got object, want array"}},
		{"dotted key quoted", strings.Replace(good, `"topology.workers": 3`, `"topology.workers": "3"`, 1), []string{`conf["topology.workers"]: got string, want number`}},
		{"nested object", strings.Replace(good, `"acked": 12`, `"acked": false`, 1), []string{"stats.acked: got bool, want number"}},
		{"several, in key order", strings.Replace(strings.Replace(good, `"supervisors": 3,`, ``, 1), `"debug": true`, `"debug": "yes"`, 1),
			[]string{"debug: got string, want bool", "supervisors: missing"}},
		{"array at the root", `[]`, []string{"(root): got array, want object"}},
		{"not JSON", `{"a":`, []string{"actual: invalid JSON: unexpected EOF"}},
		{"trailing data", `{} {}`, []string{"actual: invalid JSON: data after the document"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Check([]byte(fixture), []byte(tc.actual)); !slices.Equal(got, tc.want) {
				t.Fatalf("Check:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestCheckBadFixture(t *testing.T) {
	got := Check([]byte(`{`), []byte(`{}`))
	if len(got) != 1 || !strings.HasPrefix(got[0], "fixture: invalid JSON") {
		t.Fatalf("Check = %q", got)
	}
}

func TestForbidKeys(t *testing.T) {
	if got := ForbidKeys([]byte(`{"errorMessage":"x","ok":1}`), "error"); got != nil {
		t.Fatalf("ForbidKeys = %q", got)
	}
	if got := ForbidKeys([]byte(`{"error":"500 Server Error"}`), "error", "version"); !slices.Equal(got, []string{"error: present, must not be"}) {
		t.Fatalf("ForbidKeys = %q", got)
	}
	if got := ForbidKeys([]byte(`"error"`), "error"); !slices.Equal(got, []string{"(root): got string, want object"}) {
		t.Fatalf("ForbidKeys = %q", got)
	}
}

func TestNumeric(t *testing.T) {
	doc := []byte(`{
		"topologies": [{"uptimeSeconds": 5, "latency": "0.000"}, {"uptimeSeconds": "", "latency": "N/A"}],
		"stats": {"acked": null},
		"msgTimeout": 30
	}`)
	if got := Numeric(doc, "msgTimeout", "topologies[0].uptimeSeconds", "bolts[].capacity"); !slices.Equal(got, []string{`["topologies[0]"]: missing`}) {
		t.Fatalf("Numeric = %q (an index is not a path step; a missing array is empty)", got)
	}
	got := Numeric(doc, "msgTimeout", "msgtimeout", "topologies[].uptimeSeconds", "topologies[].latency", "stats.acked", "stats[].x")
	want := []string{
		"msgtimeout: missing",
		`topologies[1].uptimeSeconds: "" is not numeric`,
		`topologies[1].latency: "N/A" is not numeric`,
		"stats.acked: got null, want a number or a numeric string",
		"stats: got object, want array",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Numeric:\n got %q\nwant %q", got, want)
	}
}

// Every fixture of the REST API is one JSON object that passes its own
// check and, but for error.json, has no "error" key, so that a typo in one
// is found here rather than by the integration tests.
func TestStormFixtures(t *testing.T) {
	files, err := filepath.Glob("../../stormapi/testdata/storm/*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Skip("no fixtures")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := Check(b, b); got != nil {
			t.Errorf("%s against itself: %q", f, got)
		}
		if filepath.Base(f) == "error.json" {
			continue
		}
		if got := ForbidKeys(b, "error"); got != nil {
			t.Errorf("%s: %q", f, got)
		}
	}
}
