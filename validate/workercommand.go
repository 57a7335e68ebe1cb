package validate

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The placeholders of a worker command (spec.worker_command): the
// supervisor substitutes them when it starts a worker (ExpandWorkerCommand),
// and WorkerCommand refuses any other {name}, so a typo such as {prot} is
// refused at submit instead of reaching the worker as is. This file is the
// one list; the supervisor uses it.
const (
	PlaceholderCodeDir    = "{code_dir}"    // the topology's code directory on the supervisor
	PlaceholderPort       = "{port}"        // the worker's slot port
	PlaceholderTopologyID = "{topology_id}" // the topology's id
)

// workerPlaceholders are the placeholders, in the order messages list them.
var workerPlaceholders = []string{PlaceholderCodeDir, PlaceholderPort, PlaceholderTopologyID}

// WorkerPlaceholders returns the placeholders a worker command may use.
func WorkerPlaceholders() []string { return append([]string(nil), workerPlaceholders...) }

// WorkerValues are what the placeholders stand for in one worker.
type WorkerValues struct {
	CodeDir    string
	Port       int32
	TopologyID string
}

// ExpandWorkerCommand returns a copy of argv with every placeholder replaced
// by its value. Anything else, an unknown {name} included, stays as written.
func ExpandWorkerCommand(argv []string, v WorkerValues) []string {
	r := strings.NewReplacer(
		PlaceholderCodeDir, v.CodeDir,
		PlaceholderPort, strconv.Itoa(int(v.Port)),
		PlaceholderTopologyID, v.TopologyID,
	)
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = r.Replace(a)
	}
	return out
}

// WorkerCommand checks a worker's argv, as Spec does: it is exec'd as is
// by the supervisor, where a NUL byte cannot be passed and an empty program
// cannot run, after its placeholders are substituted. Errors name
// spec.worker_command or one of its elements.
func WorkerCommand(argv []string) error {
	switch {
	case len(argv) == 0:
		return Invalid("spec.worker_command", "must have at least one element (the program)")
	case len(argv) > maxWorkerCommandArgs:
		return Invalid("spec.worker_command", "must have at most %d elements, got %d", maxWorkerCommandArgs, len(argv))
	case argv[0] == "":
		return Invalid("spec.worker_command[0]", "must not be empty (it is the program)")
	}
	for i, arg := range argv {
		field := fmt.Sprintf("spec.worker_command[%d]", i)
		if len(arg) > maxWorkerCommandArg {
			return Invalid(field, "must be at most %d bytes, got %d: %s", maxWorkerCommandArg, len(arg), showValue(arg))
		}
		if strings.IndexByte(arg, 0) >= 0 {
			return Invalid(field, "must not contain a NUL byte, got %s", showValue(arg))
		}
		if p := unknownPlaceholder(arg); p != "" {
			return Invalid(field, "unknown placeholder %s in %s: the placeholders are %s",
				showValue(p), showValue(arg), strings.Join(workerPlaceholders, ", "))
		}
	}
	return nil
}

// unknownPlaceholder returns the first {name} in arg that is not a
// placeholder, or "". A name is [A-Za-z_][A-Za-z0-9_]*, so JSON, brace
// expansions ({a,b}) and awk programs ({print $1}) are not taken for one;
// nor is ${name}, a shell's parameter in a command run through sh -c.
func unknownPlaceholder(arg string) string {
	for i := 0; i < len(arg); i++ {
		if arg[i] != '{' || i > 0 && arg[i-1] == '$' {
			continue
		}
		end := strings.IndexByte(arg[i+1:], '}')
		if end < 0 {
			return ""
		}
		name := arg[i+1 : i+1+end]
		if !isPlaceholderName(name) {
			continue
		}
		if p := arg[i : i+end+2]; !slices.Contains(workerPlaceholders, p) {
			return p
		}
		i += end + 1
	}
	return ""
}

// isPlaceholderName is [A-Za-z_][A-Za-z0-9_]*.
func isPlaceholderName(s string) bool {
	if s == "" || isDigit(s[0]) {
		return false
	}
	return onlyBytes(s, func(b byte) bool {
		return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || isDigit(b) || b == '_'
	})
}
