package archtest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// docPath is where the package map lives, relative to the module's root.
const docPath = "docs/ARCHITECTURE.md"

// verify checks the package map in the markdown file doc against the
// imports of the module at root. It returns one line per problem, and the
// table as the code has it, owns cells carried over from doc where it
// parses. err is for what stops the check: an unreadable tree or document.
func verify(root, doc string) (problems []string, fromCode []row, err error) {
	pkgs, err := scanModule(root)
	if err != nil {
		return nil, nil, err
	}
	f, err := os.Open(doc)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	rows, errs := parsePackageMap(displayName(root, doc), f)
	for _, err := range errs {
		problems = append(problems, err.Error())
	}
	if len(errs) == 0 {
		problems = check(rows, pkgs)
	}
	return problems, rowsFromCode(pkgs, rows), nil
}

// displayName names doc relative to root when it is inside it, as messages
// name Go files.
func displayName(root, doc string) string {
	rel, err := filepath.Rel(root, doc)
	if err != nil || strings.HasPrefix(rel, "..") {
		return doc
	}
	return filepath.ToSlash(rel)
}

// check compares the map (rows) with the code (pkgs: each package's import
// sites) in both directions and returns one line per disagreement, package
// by package.
func check(rows []row, pkgs map[string][]importSite) []string {
	byPkg, problems := indexRows(rows)
	for _, pkg := range packageNames(byPkg, pkgs) {
		r, mapped := byPkg[pkg]
		sites, exists := pkgs[pkg]
		switch {
		case !mapped:
			problems = append(problems, fmt.Sprintf("%s: no row in %s section 9; add one", pkg, docPath))
		case !exists:
			problems = append(problems, fmt.Sprintf("%s: section 9 has a row for %s, but there is no such package", r.pos, pkg))
		default:
			problems = append(problems, checkPackage(r, ours(sites))...)
		}
		problems = append(problems, checkRestricted(pkg, sites)...)
	}
	return problems
}

// ours are the sites that import a package of this module.
func ours(sites []importSite) []importSite {
	var out []importSite
	for _, s := range sites {
		if !s.isForeign {
			out = append(out, s)
		}
	}
	return out
}

// checkRestricted refuses a non-test import of a restricted package by a
// package it does not list. The test kit, under internal/testkit, may.
func checkRestricted(pkg string, sites []importSite) []string {
	if pkg == "internal/testkit" || strings.HasPrefix(pkg, "internal/testkit/") {
		return nil
	}
	var problems []string
	for _, s := range sites {
		if !s.isForeign || s.isTest || slices.Contains(restricted[s.path], pkg) {
			continue
		}
		problems = append(problems, fmt.Sprintf("%s:%d: %s imports %s, which only %s may (their typed operations are the way in)",
			s.file, s.line, pkg, s.path, strings.Join(restricted[s.path], " and ")))
	}
	return problems
}

// indexRows maps packages to their rows, the first one when a package has
// two, which is a problem.
func indexRows(rows []row) (map[string]row, []string) {
	byPkg := map[string]row{}
	var problems []string
	for _, r := range rows {
		if first, dup := byPkg[r.pkg]; dup {
			problems = append(problems, fmt.Sprintf("%s: a second row for %s (the first is at %s)", r.pos, r.pkg, first.pos))
			continue
		}
		byPkg[r.pkg] = r
	}
	return byPkg, problems
}

// packageNames returns the packages of the map and of the code, sorted.
func packageNames(byPkg map[string]row, pkgs map[string][]importSite) []string {
	var names []string
	for pkg := range byPkg {
		names = append(names, pkg)
	}
	for pkg := range pkgs {
		if _, ok := byPkg[pkg]; !ok {
			names = append(names, pkg)
		}
	}
	slices.Sort(names)
	return names
}

// checkPackage checks one package both ways: every import against its row,
// then every import of its row against what its files import.
func checkPackage(r row, sites []importSite) []string {
	allowed := r.imports
	allowedInTests := union(r.imports, r.testImports, []string{r.pkg})
	var problems []string
	used, usedInTests := map[string]bool{}, map[string]bool{}
	for _, s := range sites {
		switch {
		case s.isTest:
			usedInTests[s.path] = true
			if !slices.Contains(allowedInTests, s.path) {
				problems = append(problems, fmt.Sprintf("%s:%d: a test of %s imports %s, which section 9 does not allow (allowed in tests: %s)",
					s.file, s.line, r.pkg, s.path, listOrNone(allowedInTests)))
			}
		default:
			used[s.path] = true
			if !slices.Contains(allowed, s.path) {
				problems = append(problems, fmt.Sprintf("%s:%d: %s imports %s, which section 9 does not allow (allowed: %s)",
					s.file, s.line, r.pkg, s.path, listOrNone(allowed)))
			}
		}
	}
	return append(problems, unusedListings(r, used, usedInTests)...)
}

// unusedListings keeps the map exact: what a row lists, its files import.
func unusedListings(r row, used, usedInTests map[string]bool) []string {
	var problems []string
	for _, p := range r.imports {
		if !used[p] {
			problems = append(problems, fmt.Sprintf("%s: section 9 lists %s for %s, but nothing in %s imports it", r.pos, p, r.pkg, r.pkg))
		}
	}
	for _, p := range r.testImports {
		switch {
		case p == r.pkg:
			problems = append(problems, fmt.Sprintf("%s: section 9 lists %s in its own tests also import; its tests may always import it", r.pos, p))
		case slices.Contains(r.imports, p):
			problems = append(problems, fmt.Sprintf("%s: section 9 lists %s for %s in both imports (ours) and tests also import; keep it in imports (ours)", r.pos, p, r.pkg))
		case !usedInTests[p]:
			problems = append(problems, fmt.Sprintf("%s: section 9 lists %s in tests also import for %s, but no test of %s imports it", r.pos, p, r.pkg, r.pkg))
		}
	}
	return problems
}

// rowsFromCode is section 9's table as the code has it, sorted by package:
// what each package's non-test files import, and what its tests add. The
// owns cells come from rows, the map as written, where it has the package.
func rowsFromCode(pkgs map[string][]importSite, rows []row) []row {
	owns := map[string]string{}
	for _, r := range rows {
		owns[r.pkg] = r.owns
	}
	var out []row
	for pkg, sites := range pkgs {
		sites = ours(sites)
		r := row{pkg: pkg, owns: owns[pkg]}
		for _, s := range sites {
			if !s.isTest {
				r.imports = union(r.imports, []string{s.path})
			}
		}
		for _, s := range sites {
			if s.isTest && s.path != pkg && !slices.Contains(r.imports, s.path) {
				r.testImports = union(r.testImports, []string{s.path})
			}
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b row) int { return strings.Compare(a.pkg, b.pkg) })
	return out
}

// union returns the paths of all lists, sorted, each once.
func union(lists ...[]string) []string {
	var all []string
	for _, l := range lists {
		all = append(all, l...)
	}
	slices.Sort(all)
	return slices.Compact(all)
}

func listOrNone(paths []string) string {
	if len(paths) == 0 {
		return "none"
	}
	return strings.Join(paths, ", ")
}
