package testcluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// BuildTags are the build tags of the daemons under test, the same the
// Makefile builds with: they leave out the torrent library's cgo SQLite
// piece-completion store and libutp, which Nimbus-HA does not use.
const BuildTags = "nosqlite,disable_libutp"

// buildPackages are the programs a run builds: the daemons, stormctl and
// the example worker.
var buildPackages = []string{"./cmd/...", "./examples/..."}

// Binaries are the programs a test run built, in one directory.
type Binaries struct{ Dir string }

// Path is the path of one program, "nimbus", "supervisor", "stormctl",
// "wordcount"...
func (b Binaries) Path(name string) string { return filepath.Join(b.Dir, name) }

// BuildOption adjusts Build (and Main, which builds).
type BuildOption func(*buildConfig)

type buildConfig struct {
	race bool
}

// WithRace builds with the race detector (the default: tests check the
// processes under test too) or, with false, without it and without cgo,
// as benchmarks want.
func WithRace(on bool) BuildOption {
	return func(c *buildConfig) { c.race = on }
}

func newBuildConfig(opts []BuildOption) buildConfig {
	c := buildConfig{race: true}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// Build compiles the programs into dir with BuildTags, with -race unless
// WithRace(false) says otherwise, in which case cgo is off
// (CGO_ENABLED=0). It blocks until the go command returns, and returns its
// output in the error if it fails.
func Build(dir string, opts ...BuildOption) (Binaries, error) {
	cfg := newBuildConfig(opts)
	root, err := moduleRoot()
	if err != nil {
		return Binaries{}, err
	}
	args := []string{"build", "-o", dir + string(filepath.Separator), "-tags", BuildTags}
	if cfg.race {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, buildPackages...)...)
	cmd.Dir = root
	cmd.Env = os.Environ()
	if !cfg.race {
		cmd.Env = append(cmd.Env, "CGO_ENABLED=0")
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return Binaries{}, fmt.Errorf("testcluster: go %v: %v\n%s", args, err, out)
	}
	return Binaries{Dir: dir}, nil
}

// moduleRoot is the directory of go.mod above the working directory, which
// go test sets to the package's.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("testcluster: no go.mod above " + dir)
		}
	}
}

// BuildAt builds the programs of this repository as they were at commit
// (a hash git knows) into dir, without the race detector and cgo, for a
// cluster that mixes that release with this one. The tree is taken with
// git archive (the repository is not touched) into a temporary directory
// and built with -trimpath, so that the packages it shares with this tree
// come from the build cache. A dir that holds a build of commit already
// is used as it is.
func BuildAt(commit, dir string) (Binaries, error) {
	stamp := filepath.Join(dir, ".commit")
	if got, err := os.ReadFile(stamp); err == nil && string(got) == commit {
		return Binaries{Dir: dir}, nil
	}
	root, err := moduleRoot()
	if err != nil {
		return Binaries{}, err
	}
	src, err := os.MkdirTemp("", "nimbus-ha-src-")
	if err != nil {
		return Binaries{}, err
	}
	defer os.RemoveAll(src)
	archive := exec.Command("sh", "-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "sh", root, commit, src)
	if out, err := archive.CombinedOutput(); err != nil {
		return Binaries{}, fmt.Errorf("testcluster: git archive %s (a clone with its history is needed): %v\n%s", commit, err, out)
	}
	args := append([]string{"build", "-trimpath", "-o", dir + string(filepath.Separator), "-tags", BuildTags}, buildPackages...)
	build := exec.Command("go", args...)
	build.Dir = src
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=mod")
	if out, err := build.CombinedOutput(); err != nil {
		return Binaries{}, fmt.Errorf("testcluster: building %s: go %v: %v\n%s", commit, args, err, out)
	}
	if err := os.WriteFile(stamp, []byte(commit), 0o644); err != nil {
		return Binaries{}, err
	}
	return Binaries{Dir: dir}, nil
}
