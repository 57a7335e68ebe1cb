package version

import (
	"runtime"
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	got := String("nimbus")
	if want := "nimbus " + Version + " (" + runtime.Version() + " "; !strings.HasPrefix(got, want) || !strings.HasSuffix(got, ")") {
		t.Errorf("String = %q, want it to start %q and end with )", got, want)
	}

	old := Version
	t.Cleanup(func() { Version = old })
	Version = "v9.9.9"
	if got := String("stormctl"); !strings.HasPrefix(got, "stormctl v9.9.9 (") || strings.Contains(got, "commit") {
		t.Errorf("with a set version String = %q, want no commit: the version names it", got)
	}
}
