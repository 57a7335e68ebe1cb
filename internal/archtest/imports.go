package archtest

import (
	"errors"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

const modulePath = "github.com/nimbusha/nimbus"

// importSite is one import of one of this module's packages, or of a
// package outside it that only some of ours may import (restricted).
type importSite struct {
	file      string // slash-separated, relative to the module's root
	line      int
	path      string // the imported package, relative to the module; its whole path if foreign
	isTest    bool   // in a _test.go file, of the package or of its external test package
	isForeign bool   // a package outside the module (restricted)
}

// restricted are packages outside the module that only the packages listed
// may import in non-test files: ZooKeeper is touched only through the
// typed state of package cluster and by the election.
var restricted = map[string][]string{
	"github.com/go-zookeeper/zk": {"cluster", "leader"},
}

// scanModule reads the imports of every .go file under root, whatever its
// build constraints, and returns them by package: its directory, relative to
// root. Every directory with a .go file is a package, even one whose files
// import nothing of ours.
func scanModule(root string) (map[string][]importSite, error) {
	pkgs := map[string][]importSite{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir():
			return skipDir(root, p, d.Name())
		case !strings.HasSuffix(d.Name(), ".go") || ignored(d.Name()):
			return nil
		}
		return addFile(pkgs, fset, root, p)
	})
	return pkgs, err
}

// skipDir leaves out what the go command leaves out, what is not ours
// (another module, node_modules) and what is built (bin).
func skipDir(root, dir, name string) error {
	if dir == root {
		return nil
	}
	if ignored(name) || name == "testdata" || name == "node_modules" || name == "bin" {
		return filepath.SkipDir
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
		return filepath.SkipDir
	}
	return nil
}

// ignored says whether the go command ignores a file or directory by its name.
func ignored(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")
}

// addFile records the file at p as part of its package, with its imports of
// this module.
func addFile(pkgs map[string][]importSite, fset *token.FileSet, root, p string) error {
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return err
	}
	file := filepath.ToSlash(rel)
	pkg := path.Dir(file)
	f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
	if err != nil {
		return err
	}
	sites := pkgs[pkg]
	if sites == nil {
		sites = []importSite{} // the package exists, importing nothing of ours so far
	}
	for _, spec := range f.Imports {
		imported, err := strconv.Unquote(spec.Path.Value)
		if err != nil {
			return err
		}
		line := fset.Position(spec.Pos()).Line
		isTest := strings.HasSuffix(file, "_test.go")
		if ours, ok := relative(imported); ok {
			sites = append(sites, importSite{file: file, line: line, path: ours, isTest: isTest})
		} else if _, ok := restricted[imported]; ok {
			sites = append(sites, importSite{file: file, line: line, path: imported, isTest: isTest, isForeign: true})
		}
	}
	pkgs[pkg] = sites
	return nil
}

// relative returns an import path of this module relative to the module.
func relative(importPath string) (string, bool) {
	if importPath == modulePath {
		return ".", true
	}
	rel, ok := strings.CutPrefix(importPath, modulePath+"/")
	return rel, ok
}

// findModuleRoot returns dir or its nearest ancestor that holds a go.mod.
func findModuleRoot(dir string) (string, error) {
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("archtest: no go.mod above the working directory")
		}
		dir = parent
	}
}
