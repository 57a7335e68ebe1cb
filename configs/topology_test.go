package configs

import (
	"errors"
	"testing"
)

func TestParseTopologyEnvironment(t *testing.T) {
	good := map[string]map[string]string{
		"":                   {},
		" , ,":               {},
		"A=1":                {"A": "1"},
		" A=1 , b_2= x y ,":  {"A": "1", "b_2": " x y"},
		"URL=http://h/?a=b":  {"URL": "http://h/?a=b"},
		"EMPTY=":             {"EMPTY": ""},
		"_X=1,STORMY=2,Y=3 ": {"_X": "1", "STORMY": "2", "Y": "3"},
	}
	for in, want := range good {
		got, err := ParseTopologyEnvironment(in)
		if err != nil || len(got) != len(want) {
			t.Errorf("parse(%q) = %v, %v; want %v", in, got, err, want)
			continue
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("parse(%q)[%s] = %q, want %q", in, k, got[k], v)
			}
		}
	}
	for _, in := range []string{
		"STORM_PORT=1", "STORM_ANYTHING=1", "storm_port=1", "Storm_Code_Dir=/x", // the supervisor's
		"A", "A=1,B", "=1", "1A=1", "A-B=1", "A B=1", "A.B=1", "É=1", // not NAME=value
		"A=1,A=2", // twice
		"A=x\x00y",
	} {
		if _, err := ParseTopologyEnvironment(in); !errors.Is(err, ErrTopologyEnvironment) {
			t.Errorf("parse(%q): %v, want ErrTopologyEnvironment", in, err)
		}
	}
}
