package configs

import (
	"cmp"
	"slices"
)

// Setting is one key of a Config as text, and where its value came from.
type Setting struct {
	Key string
	// Value is the value as a file, variable or flag would write it:
	// lists comma-separated, durations in Go form ("20s", "250ms"),
	// which every duration key accepts. Secrets are not hidden here:
	// see IsSecretKey.
	Value  string
	Source Source
}

// Settings returns every key this package knows with c's value and its
// source (c.Sources; FromDefault for a key it does not name), sorted by
// key.
func (c *Config) Settings() []Setting {
	out := make([]Setting, 0, len(fields))
	for _, f := range fields {
		_, text := describe(f.ptr(c))
		out = append(out, Setting{Key: f.key, Value: text, Source: c.Sources[f.key]})
	}
	slices.SortFunc(out, func(a, b Setting) int { return cmp.Compare(a.Key, b.Key) })
	return out
}
