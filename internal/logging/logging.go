// Package logging builds the structured logger every daemon uses, whose
// level can be changed while it runs (SetLevel).
package logging

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
)

// New returns a logger writing format ("text" or "json") at level
// ("debug", "info", "warn" or "error") to w. Every logger derived from it
// (With, WithGroup) shares its level, which SetLevel changes.
func New(w io.Writer, level, format string) (*slog.Logger, error) {
	lvl, err := ParseLevel(level)
	if err != nil {
		return nil, err
	}
	h := &handler{level: new(slog.LevelVar)}
	h.level.Set(lvl)
	opts := &slog.HandlerOptions{Level: h.level}
	switch format {
	case "text", "":
		h.Handler = slog.NewTextHandler(w, opts)
	case "json":
		h.Handler = slog.NewJSONHandler(w, opts)
	default:
		return nil, fmt.Errorf("logging: format %q: want text or json", format)
	}
	return slog.New(h), nil
}

// ParseLevel reads a log.level value.
func ParseLevel(level string) (slog.Level, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return 0, fmt.Errorf("logging: level %q: %w", level, err)
	}
	return lvl, nil
}

// ErrFixedLevel is SetLevel's answer for a logger New did not build.
var ErrFixedLevel = errors.New("logging: the logger's level cannot be changed")

// SetLevel changes the level of log, and of every logger that shares it
// (New's and those derived from it), at once for every goroutine.
func SetLevel(log *slog.Logger, level string) error {
	h, ok := log.Handler().(*handler)
	if !ok {
		return ErrFixedLevel
	}
	lvl, err := ParseLevel(level)
	if err != nil {
		return err
	}
	h.level.Set(lvl)
	return nil
}

// handler is a text or JSON handler that keeps its level where SetLevel
// finds it.
type handler struct {
	slog.Handler
	level *slog.LevelVar
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &handler{Handler: h.Handler.WithAttrs(attrs), level: h.level}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{Handler: h.Handler.WithGroup(name), level: h.level}
}
