package worker

import (
	"strings"
	"testing"
)

func TestParseExecutors(t *testing.T) {
	good := []struct {
		in   string
		want Executors
	}{
		{"sentence[1-1],split[2-3],count[4-6]", Executors{{"sentence", 1, 1}, {"split", 2, 3}, {"count", 4, 6}}},
		{" spout[1-2] , bolt[3-5] ", Executors{{"spout", 1, 2}, {"bolt", 3, 5}}},
		{"count[4-6],count[1-3]", Executors{{"count", 4, 6}, {"count", 1, 3}}},
		{"word-count[7-7]", Executors{{"word-count", 7, 7}}},
		{"big[2147483647-2147483647]", Executors{{"big", 2147483647, 2147483647}}},
	}
	for _, tc := range good {
		got, err := ParseExecutors(tc.in)
		if err != nil {
			t.Errorf("ParseExecutors(%q): %v", tc.in, err)
			continue
		}
		if got.String() != tc.want.String() || len(got) != len(tc.want) {
			t.Errorf("ParseExecutors(%q) = %v, want %v", tc.in, got, tc.want)
		}
		again, err := ParseExecutors(got.String())
		if err != nil || again.String() != got.String() {
			t.Errorf("round trip of %q: %v, %v", got, again, err)
		}
	}

	bad := []struct{ in, want string }{
		{"", "empty list"},
		{"  ", "empty list"},
		{"sentence", `entry 1 "sentence": want component[start-end]`},
		{"sentence[1-1", "want component[start-end]"},
		{"sentence[1-1]x", "want component[start-end]"},
		{"[1-1]", "empty component name"},
		{"my spout[1-1]", "component name"},
		{"a[b[1-1]", "start"},
		{"sentence[]", "task range"},
		{"sentence[1]", "task range"},
		{"sentence[0-1]", "between 1 and"},
		{"sentence[-1-1]", "start"},
		{"sentence[+1-2]", "not a positive integer"},
		{"sentence[a-2]", "not a positive integer"},
		{"sentence[1-2147483648]", "between 1 and"},
		{"sentence[2-1]", "end 1 is before start 2"},
		{"sentence[1-1],", `entry 2 ""`},
		{"sentence[1-1],,split[2-2]", "entry 2"},
		{"a[1-3],b[3-4]", "a[1-3] and b[3-4] share tasks"},
		{"a[5-6],b[1-5]", "share tasks"},
	}
	for _, tc := range bad {
		got, err := ParseExecutors(tc.in)
		if err == nil {
			t.Errorf("ParseExecutors(%q) = %v, want an error", tc.in, got)
		} else if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseExecutors(%q): error %q does not say %q", tc.in, err, tc.want)
		}
	}
}

func TestExecutorsOf(t *testing.T) {
	es, err := ParseExecutors("count[4-6],count[1-3],split[7-7]")
	if err != nil {
		t.Fatal(err)
	}
	if es.Of("count") != 2 || es.Of("split") != 1 || es.Of("sentence") != 0 {
		t.Fatalf("Of: %d %d %d", es.Of("count"), es.Of("split"), es.Of("sentence"))
	}
}
