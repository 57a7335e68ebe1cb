package main

import (
	"slices"
	"testing"
)

func TestSplitCommand(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"   \t\n ", nil},
		{"{code_dir}/artifact", []string{"{code_dir}/artifact"}},
		{"  java  -jar {code_dir}/app.jar\t--port {port} ", []string{"java", "-jar", "{code_dir}/app.jar", "--port", "{port}"}},
		{`sh -c 'exec "$0" --id {topology_id}'`, []string{"sh", "-c", `exec "$0" --id {topology_id}`}},
		{`echo "hello world" 'it''s'`, []string{"echo", "hello world", "its"}},
		{`a"b c"d`, []string{"ab cd"}},
		{`'' "" x`, []string{"", "", "x"}},
		{`a\ b \'c\' \"d\" \\e`, []string{"a b", "'c'", `"d"`, `\e`}},
		{`'a\b' "a\b" "\$HOME \"q\" \\ \` + "`" + `"`, []string{`a\b`, `a\b`, "$HOME \"q\" \\ `"}},
		{"a\\\nb", []string{"ab"}},
		{"\"a\\\nb\"", []string{"ab"}},
		{`$HOME ~ *.jar`, []string{"$HOME", "~", "*.jar"}},
		{"née 'ünï code'", []string{"née", "ünï code"}},
	} {
		got, err := splitCommand(tc.in)
		if err != nil {
			t.Errorf("splitCommand(%q): %v", tc.in, err)
			continue
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("splitCommand(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestSplitCommandErrors(t *testing.T) {
	for in, want := range map[string]string{
		`a 'b`:    "unterminated single quote",
		`a "b`:    "unterminated double quote",
		`"a\"`:    "unterminated double quote",
		`a \`:     "trailing backslash",
		`'a'"b\`:  "unterminated double quote",
		`x "y" '`: "unterminated single quote",
	} {
		got, err := splitCommand(in)
		if err == nil || err.Error() != want {
			t.Errorf("splitCommand(%q) = %q, %v; want error %q", in, got, err, want)
		}
	}
}
