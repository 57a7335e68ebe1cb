package archtest

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// mapDoc is a document whose section 9 holds the table rows, at lines 7 on.
func mapDoc(rows ...string) string {
	return strings.Join(append([]string{
		"# Architecture",
		"## 8. Configuration",
		"## 9. Package map",
		"",
		tableHeader,
		"|---|---|---|---|",
	}, append(rows,
		"",
		"## 10. Leadership",
		"| `ignored` | after the section | — | — |",
	)...), "\n")
}

func TestParsePackageMap(t *testing.T) {
	tests := []struct {
		name     string
		doc      string
		wantRows []row
		wantErrs []string
	}{{
		name: "good table",
		doc: mapDoc(
			"| `proto/cluster/v1` | ZooKeeper payloads | — | — |",
			"| `cluster` | the session, a \\| pipe | `proto/cluster/v1` | `internal/testkit/testcluster`, `configs` |",
			"| `cmd/nimbus` |  | `configs`,`nimbus` | — |",
		),
		wantRows: []row{
			{pos: "A.md:7", pkg: "proto/cluster/v1", owns: "ZooKeeper payloads"},
			{pos: "A.md:8", pkg: "cluster", owns: `the session, a \| pipe`, imports: []string{"proto/cluster/v1"},
				testImports: []string{"internal/testkit/testcluster", "configs"}},
			{pos: "A.md:9", pkg: "cmd/nimbus", imports: []string{"configs", "nimbus"}},
		},
	}, {
		name: "malformed cells",
		doc: mapDoc(
			"| `cluster` | fine | — | — |",
			"| `codedistributor` | store | `cluster`, proto | — |",
			"| leader | election | — |  |",
			"| `a` | twice | `b`, `b` | `../c` |",
			"| `d` | too few | — |",
		),
		wantErrs: []string{
			`A.md:8: imports (ours): "proto" is not a backticked package path (write —, or a list like ` + "`cluster`, `configs`)",
			`A.md:9: package "leader" is not one backticked package path; tests also import: "" is not a backticked package path (write —, or a list like ` + "`cluster`, `configs`)",
			"A.md:10: imports (ours): `b` is listed twice; tests also import: \"`../c`\" is not a backticked package path (write —, or a list like `cluster`, `configs`)",
			"A.md:11: a row has 4 cells, this one 3",
		},
	}, {
		name:     "missing section",
		doc:      "# Architecture\n## 8. Configuration\n" + tableHeader + "\n",
		wantErrs: []string{`A.md: no section headed "## 9. Package map"`},
	}, {
		name: "old header",
		doc:  "## 9. Package map\n\n| package | owns | imports (ours) |\n|---|---|---|\n",
		wantErrs: []string{`A.md:1: section 9 has no table whose header is "` + tableHeader +
			`" (line 3 has "| package | owns | imports (ours) |")`},
	}, {
		name:     "no separator",
		doc:      "## 9. Package map\n" + tableHeader + "\n| `a` | x | — | — |\n",
		wantErrs: []string{`A.md:3: the header must be followed by "|---|---|---|---|"`},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows, errs := parsePackageMap("A.md", strings.NewReader(tt.doc))
			if !reflect.DeepEqual(rows, tt.wantRows) {
				t.Errorf("rows:\n got %+v\nwant %+v", rows, tt.wantRows)
			}
			if got := errorStrings(errs); !reflect.DeepEqual(got, tt.wantErrs) {
				t.Errorf("errors:\n got %q\nwant %q", got, tt.wantErrs)
			}
		})
	}
}

// TestFormatTableParses keeps the printed table in the format the parser
// reads, so that it can be pasted as it is.
func TestFormatTableParses(t *testing.T) {
	want := []row{
		{pos: "A.md:7", pkg: "cluster", owns: "the session", imports: []string{"proto/cluster/v1"}, testImports: []string{"configs"}},
		{pos: "A.md:8", pkg: "proto/cluster/v1"},
	}
	table := formatTable(want)
	doc := "## 9. Package map\n\n\n\n" + table
	got, errs := parsePackageMap("A.md", strings.NewReader(doc))
	if len(errs) > 0 || !reflect.DeepEqual(got, want) {
		t.Errorf("formatTable wrote\n%s\nwhich parses as %+v, %v; want %+v", table, got, errs, want)
	}
	if !strings.Contains(table, "| `proto/cluster/v1` | | — | — |\n") {
		t.Errorf("formatTable wrote\n%s\nwant an empty owns cell and em dashes for no imports", table)
	}
}

func errorStrings(errs []error) []string {
	var s []string
	for _, err := range errs {
		s = append(s, fmt.Sprint(err))
	}
	return s
}
