package validate

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	clusterv1 "github.com/nimbusha/nimbus/proto/cluster/v1"
	nimbusv1 "github.com/nimbusha/nimbus/proto/nimbus/v1"
	"github.com/nimbusha/nimbus/workerproto"
)

// Bounds of a topology's log config: a worker's log-level file stays far
// below workerproto.MaxLogLevelBytes, and a timeout is an operator's
// "for a while", not a setting.
const (
	MaxLoggers          = 64
	MaxLogLevelTimeout  = 7 * 24 * 3600 // seconds
	maxLoggerNameLength = workerproto.MaxNameBytes
)

// SetLogConfig checks a SetLogConfig request: a topology name or id; at
// least one logger to set or remove, at most MaxLoggers; each name a
// logger name, each level one of workerproto.Levels (any case), each
// timeout from 0 to MaxLogLevelTimeout; no logger both set and removed.
func SetLogConfig(req *nimbusv1.SetLogConfigRequest) error {
	if err := TopologyName("name", req.GetName()); err != nil && TopologyID("name", req.GetName()) != nil {
		return err
	}
	if len(req.GetSet())+len(req.GetRemove()) == 0 {
		return Invalid("set", "names no logger to set or remove")
	}
	if n := len(req.GetSet()) + len(req.GetRemove()); n > MaxLoggers {
		return Invalid("set", "names %d loggers; at most %d", n, MaxLoggers)
	}
	for _, name := range slices.Sorted(maps.Keys(req.GetSet())) {
		if err := loggerLevel(fmt.Sprintf("set[%q]", name), name, req.GetSet()[name]); err != nil {
			return err
		}
	}
	for i, name := range req.GetRemove() {
		field := fmt.Sprintf("remove[%d]", i)
		if err := LoggerName(field, name); err != nil {
			return err
		}
		if _, ok := req.GetSet()[name]; ok {
			return Invalid(field, "logger %s is also set", showValue(name))
		}
	}
	return nil
}

// loggerLevel checks one logger's entry of a SetLogConfig request.
func loggerLevel(field, name string, l *clusterv1.LoggerLevel) error {
	if err := LoggerName(field, name); err != nil {
		return err
	}
	if _, err := workerproto.ParseLevel(l.GetTargetLevel()); err != nil {
		return Invalid(field+".target_level", "%v", err)
	}
	if l.GetResetLevel() != "" {
		if _, err := workerproto.ParseLevel(l.GetResetLevel()); err != nil {
			return Invalid(field+".reset_level", "%v", err)
		}
	}
	if t := l.GetTimeoutSecs(); t < 0 || t > MaxLogLevelTimeout {
		return Invalid(field+".timeout_secs", "is %d; want 0 (none) to %d", t, MaxLogLevelTimeout)
	}
	return nil
}

// LoggerName checks a logger's name: "ROOT" or a dotted name as log4j's,
// 1 to 256 bytes of UTF-8 without spaces or control characters.
func LoggerName(field, name string) error {
	switch {
	case name == "":
		return Invalid(field, "is an empty logger name")
	case len(name) > maxLoggerNameLength:
		return Invalid(field, "is a logger name of %d bytes; at most %d", len(name), maxLoggerNameLength)
	case !utf8.ValidString(name) || strings.ContainsFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }):
		return Invalid(field, "logger name %s has spaces or control characters", showValue(name))
	}
	return nil
}
