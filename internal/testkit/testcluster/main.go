package testcluster

import (
	"fmt"
	"os"
	"sync"
	"testing"
)

// build builds the programs once, into Main's directory; nil until Main
// runs, which sets it before any test starts.
var build func() (Binaries, error)

// Main is the TestMain of a package whose tests run the daemons:
//
//	func TestMain(m *testing.M) { testcluster.Main(m) }
//
// It makes a temporary directory, runs the tests, removes the directory
// and exits with the tests' code. The programs are built into the
// directory once, with opts, when a test first asks for them (Bin, which
// New calls): a run that needs none, such as the bench package's tests
// without -bench, builds nothing.
func Main(m *testing.M, opts ...BuildOption) {
	os.Exit(runMain(m, opts))
}

func runMain(m *testing.M, opts []BuildOption) int {
	dir, err := os.MkdirTemp("", "nimbus-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "testcluster:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	build = sync.OnceValues(func() (Binaries, error) { return Build(dir, opts...) })
	return m.Run()
}

// Bin returns the programs Main builds. The first call builds them and
// blocks until the build ends (a minute or more when the go build cache
// is cold); later calls return at once. It fails the test if the package's
// TestMain does not call Main or if the build failed.
func Bin(t testing.TB) Binaries {
	t.Helper()
	if build == nil {
		t.Fatal("testcluster: no binaries: the package's TestMain must call testcluster.Main")
	}
	b, err := build()
	if err != nil {
		t.Fatal(err)
	}
	return b
}
