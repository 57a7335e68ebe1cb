// Package logging builds the structured logger every daemon uses.
package logging

import (
	"fmt"
	"io"
	"log/slog"
)

// New returns a logger writing format ("text" or "json") at level
// ("debug", "info", "warn" or "error") to w.
func New(w io.Writer, level, format string) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("logging: level %q: %w", level, err)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch format {
	case "text", "":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	default:
		return nil, fmt.Errorf("logging: format %q: want text or json", format)
	}
}
