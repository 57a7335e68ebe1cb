package archtest

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var printMap = flag.Bool("print-map", false, "print section 9's table as the code has it, ready to paste into "+docPath)

// TestPackageMapIsTrue checks docs/ARCHITECTURE.md section 9 against the
// imports of the whole module.
func TestPackageMapIsTrue(t *testing.T) {
	root := moduleRoot(t)
	problems, fromCode, err := verify(root, filepath.Join(root, filepath.FromSlash(docPath)))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	switch {
	case *printMap:
		// On stdout, unindented, so that it pastes as it is.
		fmt.Print(formatTable(fromCode))
	case len(problems) > 0:
		t.Log("the table as the code has it: go test ./internal/archtest -run TestPackageMapIsTrue -v -args -print-map")
	}
}

// TestPrintedMapIsTrue keeps -print-map's table one that passes.
func TestPrintedMapIsTrue(t *testing.T) {
	root := moduleRoot(t)
	_, fromCode, err := verify(root, filepath.Join(root, filepath.FromSlash(docPath)))
	if err != nil {
		t.Fatal(err)
	}
	doc := filepath.Join(t.TempDir(), "ARCHITECTURE.md")
	writeFile(t, doc, "## 9. Package map\n\n"+formatTable(fromCode))
	problems, _, err := verify(root, doc)
	if err != nil || len(problems) > 0 {
		t.Errorf("the printed table does not pass: %v\n%s", err, strings.Join(problems, "\n"))
	}
}

// TestVerifyOnDisk runs the whole check, files and walk included, over a
// module of three packages.
func TestVerifyOnDisk(t *testing.T) {
	table := "| `a` | the bottom | — | — |\n" +
		"| `b` | the middle | `a` | `c` |\n" +
		"| `c` | the top | `b` | — |\n"
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"go.mod":      "module " + modulePath + "\n",
		"docs/A.md":   "# Architecture\n## 9. Package map\n\n" + tableHeader + "\n|---|---|---|---|\n" + table,
		"a/a.go":      "package a\n",
		"b/b.go":      "package b\n\nimport (\n\t\"fmt\"\n\n\t\"" + modulePath + "/a\"\n)\n",
		"b/b_test.go": "package b_test\n\nimport (\n\t\"" + modulePath + "/b\"\n\t\"" + modulePath + "/c\"\n)\n",
		// Build constraints do not hide an import.
		"c/c.go": "//go:build ignore\n\npackage c\n\nimport _ \"" + modulePath + "/b\"\n",
		// What the walk leaves out: none of these has a row.
		"c/_ignored.go":         "package c\n\nimport _ \"" + modulePath + "/a\"\n",
		"c/testdata/x.go":       "package x\n",
		"c/node_modules/n/n.go": "package n\n",
		".tools/t/t.go":         "package t\n",
		"b/.hidden/h.go":        "package h\n",
		"_skipped/s.go":         "package s\n",
		"bin/b.go":              "package b\n",
		"other/go.mod":          "module example.com/other\n",
		"other/o.go":            "package o\n",
	})
	doc := filepath.Join(root, "docs", "A.md")

	t.Run("true map", func(t *testing.T) {
		problems, fromCode, err := verify(root, doc)
		if err != nil || len(problems) > 0 {
			t.Fatalf("verify: %v %q", err, problems)
		}
		if got := strings.SplitAfterN(formatTable(fromCode), "\n", 3)[2]; got != table {
			t.Errorf("printed rows:\n%s\nwant\n%s", got, table)
		}
	})
	t.Run("a wrong import", func(t *testing.T) {
		writeFiles(t, root, map[string]string{"a/up.go": "package a\n\nimport _ \"" + modulePath + "/c\"\n"})
		problems, _, err := verify(root, doc)
		want := []string{"a/up.go:3: a imports c, which section 9 does not allow (allowed: none)"}
		if err != nil || !reflect.DeepEqual(problems, want) {
			t.Errorf("verify: %v\n got %q\nwant %q", err, problems, want)
		}
	})
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root, err := findModuleRoot(wd)
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, p, content)
	}
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
