package workerproto

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
)

// RootLogger names the logger every other falls back to, as in Storm.
const RootLogger = "ROOT"

// MaxLogLevelBytes is the largest log-level file a worker reads.
const MaxLogLevelBytes = 64 << 10

// Level is a logger's level by Storm's (log4j's) names.
type Level string

// The levels, from most to least verbose.
const (
	LevelAll   Level = "ALL"
	LevelTrace Level = "TRACE"
	LevelDebug Level = "DEBUG"
	LevelInfo  Level = "INFO"
	LevelWarn  Level = "WARN"
	LevelError Level = "ERROR"
	LevelFatal Level = "FATAL"
	LevelOff   Level = "OFF"
)

// Levels lists every level, from most to least verbose.
var Levels = []Level{LevelAll, LevelTrace, LevelDebug, LevelInfo, LevelWarn, LevelError, LevelFatal, LevelOff}

// ErrBadLogLevels is a log-level file that is not a valid one.
var ErrBadLogLevels = errors.New("workerproto: bad log-level file")

// ParseLevel reads a level name in any case.
func ParseLevel(s string) (Level, error) {
	l := Level(strings.ToUpper(strings.TrimSpace(s)))
	if !slices.Contains(Levels, l) {
		return "", fmt.Errorf("level %q is none of %v", truncate(s, 32), Levels)
	}
	return l, nil
}

// LogLevels is the content of a log-level file: logger name to level.
// Names are dotted paths, as log4j's: a logger without an entry takes its
// nearest named parent's ("a.b.c", then "a.b", then "a"), then RootLogger's.
type LogLevels map[string]Level

// Effective is the level of logger name: its own entry, its nearest
// parent's, or RootLogger's; ok is false when none of them has one.
func (l LogLevels) Effective(name string) (level Level, ok bool) {
	for n := name; n != ""; {
		if level, ok = l[n]; ok {
			return level, true
		}
		i := strings.LastIndexByte(n, '.')
		if i < 0 {
			break
		}
		n = n[:i]
	}
	level, ok = l[RootLogger]
	return level, ok
}

// EncodeLogLevels is the file's content for l: one JSON object, names
// sorted. It refuses what ParseLogLevels would.
func EncodeLogLevels(l LogLevels) ([]byte, error) {
	if err := l.validate(); err != nil {
		return nil, err
	}
	b, err := json.Marshal(l) // keys sorted
	if err != nil {
		return nil, err
	}
	if len(b) > MaxLogLevelBytes {
		return nil, fmt.Errorf("%w: %d bytes, more than %d", ErrBadLogLevels, len(b), MaxLogLevelBytes)
	}
	return append(b, '\n'), nil
}

// ParseLogLevels reads a log-level file's content: one JSON object of
// logger names to level names (any case; normalised to upper case). Empty
// content is no levels. Errors name the logger at fault and wrap
// ErrBadLogLevels.
func ParseLogLevels(b []byte) (LogLevels, error) {
	if len(b) > MaxLogLevelBytes {
		return nil, fmt.Errorf("%w: %d bytes, more than %d", ErrBadLogLevels, len(b), MaxLogLevelBytes)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return LogLevels{}, nil
	}
	var raw map[string]string
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("%w: want one JSON object of logger names to levels: %v", ErrBadLogLevels, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: more than one JSON value", ErrBadLogLevels)
	}
	l := make(LogLevels, len(raw))
	for name, v := range raw {
		level, err := ParseLevel(v)
		if err != nil {
			return nil, fmt.Errorf("%w: logger %q: %v", ErrBadLogLevels, truncate(name, 64), err)
		}
		l[name] = level
	}
	if err := l.validate(); err != nil {
		return nil, err
	}
	return l, nil
}

// ReadLogLevels reads the log-level file at path (ReadFile's rules). A
// missing file is no levels, not an error: the supervisor writes one only
// when some level was set.
func ReadLogLevels(path string) (LogLevels, error) {
	b, _, err := ReadFile(path, MaxLogLevelBytes)
	if errors.Is(err, os.ErrNotExist) {
		return LogLevels{}, nil
	}
	if err != nil {
		return nil, err
	}
	return ParseLogLevels(b)
}

func (l LogLevels) validate() error {
	for _, name := range slices.Sorted(maps.Keys(l)) {
		if err := CheckName(name); err != nil {
			return fmt.Errorf("%w: logger name: %v", ErrBadLogLevels, err)
		}
		if !slices.Contains(Levels, l[name]) {
			return fmt.Errorf("%w: logger %q: level %q is none of %v", ErrBadLogLevels, name, truncate(string(l[name]), 32), Levels)
		}
	}
	return nil
}
