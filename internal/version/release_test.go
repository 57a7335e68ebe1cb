package version

import "testing"

func TestReleases(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"0.1", "0.2", -1}, {"0.2", "0.2", 0}, {"0.10", "0.9", 1}, {"1.0", "0.99", 1},
	} {
		if got, err := CompareReleases(tc.a, tc.b); err != nil || got != tc.want {
			t.Errorf("CompareReleases(%s, %s) = %d, %v; want %d", tc.a, tc.b, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "1", "1.x", "v0.2", "0.2.1", "-1.0"} {
		if _, err := CompareReleases(bad, "0.1"); err == nil {
			t.Errorf("CompareReleases(%q) accepted it", bad)
		}
	}
	if got := Lowest("0.2", "", "0.3"); got != Oldest {
		t.Errorf("Lowest with a daemon that names no release = %s, want %s", got, Oldest)
	}
	if got := Lowest("0.3", "0.2", "0.10"); got != "0.2" {
		t.Errorf("Lowest = %s, want 0.2", got)
	}
	if got := Lowest("0.3", "garbage"); got != Oldest {
		t.Errorf("Lowest with an unreadable release = %s, want %s", got, Oldest)
	}
	if got := Lowest(); got != "" {
		t.Errorf("Lowest() = %q", got)
	}
	if _, err := CompareReleases(Release, Oldest); err != nil {
		t.Errorf("Release %q: %v", Release, err)
	}
}

func TestFeatureEnabled(t *testing.T) {
	f := Feature{Name: "f", Release: "0.2"}
	for cluster, want := range map[string]bool{"0.1": false, "0.2": true, "0.3": true, "": false, "x": false} {
		if got := f.Enabled(cluster); got != want {
			t.Errorf("Enabled(%q) = %v, want %v", cluster, got, want)
		}
	}
}
