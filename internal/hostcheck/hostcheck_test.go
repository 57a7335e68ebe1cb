package hostcheck

import "testing"

func TestAllowed(t *testing.T) {
	names := []string{"nimbus-1.example", "sup.example.", "", "*.Storm.example"}
	for host, want := range map[string]bool{
		"":                      true,
		"127.0.0.1":             true,
		"127.0.0.1:8080":        true,
		"[::1]:8080":            true,
		"10.1.2.3":              true,
		"localhost:8080":        true,
		"ui.localhost":          true,
		"nimbus-1.example:8080": true,
		"NIMBUS-1.example.":     true,
		"sup.example":           true,
		"evil.example":          false,
		"evil.example:8080":     false,
		"nimbus-1.example.evil": false,
		"localhost.evil":        false,
		":8080":                 true,
		"ui.storm.example:443":  true,
		"storm.example":         false,
		"a.b.storm.example":     false,
		".storm.example":        false,
	} {
		if got := Allowed(host, names); got != want {
			t.Errorf("Allowed(%q) = %v, want %v", host, got, want)
		}
	}
}
