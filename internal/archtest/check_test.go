package archtest

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// fixture is a true map of three packages and the code it describes: c
// imports b, which imports a; b's tests add c, and b's external test
// package imports b itself.
func fixture() ([]row, map[string][]importSite) {
	rows := []row{
		{pos: "A.md:7", pkg: "a"},
		{pos: "A.md:8", pkg: "b", imports: []string{"a"}, testImports: []string{"c"}},
		{pos: "A.md:9", pkg: "c", imports: []string{"b"}},
	}
	pkgs := map[string][]importSite{
		"a": {},
		"b": {site("b/b.go:3", "a"), site("b/b_test.go:4", "c"), site("b/x_test.go:5", "b"), site("b/x_test.go:6", "a")},
		"c": {site("c/c.go:3", "b")},
	}
	return rows, pkgs
}

// site is an import of path at "file:line"; a _test.go file makes it a test's.
func site(fileLine, path string) importSite {
	file, line, _ := strings.Cut(fileLine, ":")
	n, _ := strconv.Atoi(line)
	return importSite{file: file, line: n, path: path, isTest: strings.HasSuffix(file, "_test.go")}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name string
		edit func(rows []row, pkgs map[string][]importSite) []row
		want []string
	}{{
		name: "true map",
		edit: func(rows []row, _ map[string][]importSite) []row { return rows },
	}, {
		name: "a deliberately wrong import is reported naming its file",
		edit: func(rows []row, pkgs map[string][]importSite) []row {
			pkgs["a"] = append(pkgs["a"], site("a/up.go:17", "c"))
			return rows
		},
		want: []string{"a/up.go:17: a imports c, which section 9 does not allow (allowed: none)"},
	}, {
		name: "ZooKeeper imported outside cluster and leader",
		edit: func(rows []row, pkgs map[string][]importSite) []row {
			pkgs["b"] = append(pkgs["b"], importSite{file: "b/zk.go", line: 5, path: "github.com/go-zookeeper/zk", isForeign: true},
				importSite{file: "b/zk_test.go", line: 6, path: "github.com/go-zookeeper/zk", isTest: true, isForeign: true})
			return rows
		},
		want: []string{"b/zk.go:5: b imports github.com/go-zookeeper/zk, which only cluster and leader may (their typed operations are the way in)"},
	}, {
		name: "ZooKeeper imported by cluster and the test kit",
		edit: func(rows []row, pkgs map[string][]importSite) []row {
			pkgs["cluster"] = []importSite{{file: "cluster/s.go", line: 5, path: "github.com/go-zookeeper/zk", isForeign: true}}
			pkgs["internal/testkit/zkt"] = []importSite{{file: "internal/testkit/zkt/z.go", line: 5, path: "github.com/go-zookeeper/zk", isForeign: true}}
			return append(rows, row{pos: "A.md:10", pkg: "cluster"}, row{pos: "A.md:11", pkg: "internal/testkit/zkt"})
		},
	}, {
		name: "a test imports what neither column lists",
		edit: func(rows []row, pkgs map[string][]importSite) []row {
			pkgs["c"] = append(pkgs["c"], site("c/c_test.go:9", "a"))
			return rows
		},
		want: []string{"c/c_test.go:9: a test of c imports a, which section 9 does not allow (allowed in tests: b, c)"},
	}, {
		name: "a package without a row",
		edit: func(rows []row, pkgs map[string][]importSite) []row {
			pkgs["cmd/d"] = []importSite{site("cmd/d/main.go:4", "c")}
			return rows
		},
		want: []string{"cmd/d: no row in docs/ARCHITECTURE.md section 9; add one"},
	}, {
		name: "a row for no package",
		edit: func(rows []row, _ map[string][]importSite) []row {
			return append(rows, row{pos: "A.md:10", pkg: "gone"})
		},
		want: []string{"A.md:10: section 9 has a row for gone, but there is no such package"},
	}, {
		name: "an import listed that nothing imports",
		edit: func(rows []row, _ map[string][]importSite) []row {
			rows[2].imports = append(rows[2].imports, "a")
			return rows
		},
		want: []string{"A.md:9: section 9 lists a for c, but nothing in c imports it"},
	}, {
		name: "an import listed that only tests make",
		edit: func(rows []row, _ map[string][]importSite) []row {
			rows[1].imports = append(rows[1].imports, "c")
			rows[1].testImports = nil
			return rows
		},
		want: []string{"A.md:8: section 9 lists c for b, but nothing in b imports it"},
	}, {
		name: "a test import listed that no test makes",
		edit: func(rows []row, _ map[string][]importSite) []row {
			rows[2].testImports = []string{"a"}
			return rows
		},
		want: []string{"A.md:9: section 9 lists a in tests also import for c, but no test of c imports it"},
	}, {
		name: "a test import listed in both columns",
		edit: func(rows []row, _ map[string][]importSite) []row {
			rows[1].testImports = append(rows[1].testImports, "a")
			return rows
		},
		want: []string{"A.md:8: section 9 lists a for b in both imports (ours) and tests also import; keep it in imports (ours)"},
	}, {
		name: "a package listing itself for its tests",
		edit: func(rows []row, _ map[string][]importSite) []row {
			rows[1].testImports = append(rows[1].testImports, "b")
			return rows
		},
		want: []string{"A.md:8: section 9 lists b in its own tests also import; its tests may always import it"},
	}, {
		name: "a duplicate row",
		edit: func(rows []row, _ map[string][]importSite) []row {
			return append(rows, row{pos: "A.md:10", pkg: "a", imports: []string{"c"}})
		},
		want: []string{"A.md:10: a second row for a (the first is at A.md:7)"},
	}, {
		name: "every problem, not the first",
		edit: func(rows []row, pkgs map[string][]importSite) []row {
			pkgs["a"] = append(pkgs["a"], site("a/up.go:17", "c"), site("a/up.go:18", "b"))
			return append(rows, row{pos: "A.md:10", pkg: "gone"})
		},
		want: []string{
			"a/up.go:17: a imports c, which section 9 does not allow (allowed: none)",
			"a/up.go:18: a imports b, which section 9 does not allow (allowed: none)",
			"A.md:10: section 9 has a row for gone, but there is no such package",
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows, pkgs := fixture()
			got := check(tt.edit(rows, pkgs), pkgs)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("check:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestRowsFromCode(t *testing.T) {
	wantRows, pkgs := fixture()
	wantRows[0].owns = "kept"
	got := rowsFromCode(pkgs, []row{{pkg: "a", owns: "kept"}, {pkg: "gone", owns: "dropped"}})
	for i := range wantRows {
		wantRows[i].pos = ""
	}
	if !reflect.DeepEqual(got, wantRows) {
		t.Errorf("rowsFromCode:\n got %+v\nwant %+v", got, wantRows)
	}
}
