package validate

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestWorkerCommandPlaceholders(t *testing.T) {
	for _, tc := range []struct {
		arg     string
		unknown string // "" means accepted
	}{
		{arg: "{code_dir}/artifact"},
		{arg: "--port={port}"},
		{arg: "{topology_id}"},
		{arg: "x{port}y{code_dir}z{topology_id}"},
		{arg: "{{port}}"},
		{arg: "${HOME}"},     // a shell's, for sh -c
		{arg: "${prot}"},     // likewise: not ours to judge
		{arg: `{"port": 1}`}, // JSON
		{arg: "{a,b}"},       // brace expansion
		{arg: "{print $1}"},  // awk
		{arg: "{1x}"},        // not a name
		{arg: "{}"},          // empty
		{arg: "{port"},       // unclosed
		{arg: "port}"},       // no opening
		{arg: "{port-x}"},    // '-' is not in a name
		{arg: "{prot}", unknown: "{prot}"},
		{arg: "--port={prot}", unknown: "{prot}"},
		{arg: "{PORT}", unknown: "{PORT}"}, // placeholders are lower case
		{arg: "{code_dir}/{topo_id}", unknown: "{topo_id}"},
		{arg: "{port}{x}", unknown: "{x}"},
		{arg: "{_}", unknown: "{_}"},
		{arg: "{a {prot}}", unknown: "{prot}"},
		{arg: "$x{prot}", unknown: "{prot}"}, // '$' must be right before the brace
	} {
		err := WorkerCommand([]string{"{code_dir}/artifact", tc.arg})
		if tc.unknown == "" {
			if err != nil {
				t.Errorf("%q: %v, want it accepted", tc.arg, err)
			}
			continue
		}
		checkField(t, err, "spec.worker_command[1]")
		reason := err.(*Error).Reason
		want := `unknown placeholder "` + tc.unknown + `" in "` + tc.arg + `": the placeholders are {code_dir}, {port}, {topology_id}`
		if reason != want {
			t.Errorf("%q: reason %q, want %q", tc.arg, reason, want)
		}
	}
}

func TestSpecRefusesUnknownPlaceholder(t *testing.T) {
	s := validSpec()
	s.WorkerCommand = []string{"{code_dir}/artifact", "--port", "{prot}"}
	err := Spec(s)
	checkField(t, err, "spec.worker_command[2]")
	if !strings.Contains(err.Error(), `"{prot}"`) || !strings.Contains(err.Error(), "{port}") {
		t.Errorf("error %q does not name the placeholder and list the known ones", err)
	}
	// The program itself is checked too.
	s.WorkerCommand = []string{"{code}/artifact"}
	checkField(t, Spec(s), "spec.worker_command[0]")
}

func TestExpandWorkerCommand(t *testing.T) {
	argv := []string{"{code_dir}/artifact", "--port", "{port}", "--id={topology_id}", "{prot}", "${HOME}", "{port}{port}"}
	orig := slices.Clone(argv)
	got := ExpandWorkerCommand(argv, WorkerValues{CodeDir: "/var/storm/code/wc-1-2", Port: 6700, TopologyID: "wc-1-2"})
	want := []string{"/var/storm/code/wc-1-2/artifact", "--port", "6700", "--id=wc-1-2", "{prot}", "${HOME}", "67006700"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if !slices.Equal(argv, orig) {
		t.Errorf("the argv given was changed: %q", argv)
	}
}

// TestEveryPlaceholderIsExpanded keeps the list and the substitution in
// step: a placeholder added to one but not the other fails here.
func TestEveryPlaceholderIsExpanded(t *testing.T) {
	ps := WorkerPlaceholders()
	if len(ps) == 0 {
		t.Fatal("no placeholders")
	}
	if err := WorkerCommand(ps); err != nil {
		t.Fatalf("the placeholders are refused: %v", err)
	}
	got := ExpandWorkerCommand(ps, WorkerValues{CodeDir: "/c", Port: 1, TopologyID: "t-1-2"})
	for i, p := range ps {
		if strings.ContainsAny(got[i], "{}") {
			t.Errorf("%s is not substituted: %q", p, got[i])
		}
	}
	ps[0] = "{changed}"
	if WorkerPlaceholders()[0] == "{changed}" {
		t.Error("WorkerPlaceholders returns the list itself: a caller can change it")
	}
}

// placeholderRe finds what the rules call a placeholder, independently of
// unknownPlaceholder, for the fuzz targets.
var placeholderRe = regexp.MustCompile(`\{[A-Za-z_][A-Za-z0-9_]*\}`)

// checkOnlyKnownPlaceholders fails t if arg, accepted, has a {name} that is
// neither a placeholder nor right after a '$'.
func checkOnlyKnownPlaceholders(t *testing.T, arg string) {
	t.Helper()
	for _, m := range placeholderRe.FindAllStringIndex(arg, -1) {
		p := arg[m[0]:m[1]]
		if (m[0] == 0 || arg[m[0]-1] != '$') && !slices.Contains(WorkerPlaceholders(), p) {
			t.Fatalf("accepted unknown placeholder %q in %q", p, arg)
		}
	}
}
