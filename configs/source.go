package configs

import (
	"errors"
	"fmt"
	"strconv"
)

// SourceKind is the layer of the configuration that set a value.
type SourceKind int

// The layers, in increasing precedence.
const (
	FromDefault SourceKind = iota // the built-in default
	FromFile                      // the YAML file named by --config
	FromEnv                       // a STORM_* environment variable
	FromFlag                      // a command-line flag
)

// Source is where a value came from, precisely enough for an operator to
// go and change it.
type Source struct {
	Kind SourceKind
	// Name is the file's path (FromFile), the variable's name (FromEnv)
	// or the flag's name without dashes (FromFlag).
	Name string
	// Line is the key's line in the file; 0 when unknown (a key that a
	// YAML merge brought in).
	Line int
}

// String names the place: "storm.yaml:12", "STORM_NIMBUS_GRPC_PORT",
// "--nimbus.grpc.port", or "default".
func (s Source) String() string {
	switch s.Kind {
	case FromFile:
		if s.Line > 0 {
			return s.Name + ":" + strconv.Itoa(s.Line)
		}
		return s.Name
	case FromEnv:
		return s.Name
	case FromFlag:
		return "--" + s.Name
	}
	return "default"
}

// KeyError is a problem with one key, and where its value came from.
// Validate knows only the key (Source is FromDefault); Load fills in the
// source. Its text leads with what the operator typed, so they can find
// it: the file, line and key; the variable; or the flag:
//
//	configs: storm.yaml:12: nimbus.grpc.port: "abc" is not an integer
//	configs: STORM_NIMBUS_GRPC_PORT: "abc" is not an integer
//	configs: --nimbus.grpc.port: "abc" is not an integer
//	configs: nimbus.grpc.port: 70000 is out of range 0..65535
type KeyError struct {
	// Key is the key; for a key or variable this package does not know,
	// the name as written.
	Key    string
	Source Source
	Err    error
}

func (e *KeyError) Error() string {
	switch e.Source.Kind {
	case FromFile:
		return fmt.Sprintf("configs: %s: %s: %v", e.Source, e.Key, e.Err)
	case FromEnv, FromFlag:
		// The variable or flag already names the key.
		return fmt.Sprintf("configs: %s: %v", e.Source, e.Err)
	}
	return fmt.Sprintf("configs: %s: %v", e.Key, e.Err)
}

func (e *KeyError) Unwrap() error { return e.Err }

// attribute returns err with the source of each KeyError's key filled in
// from sources, keeping the errors.Join structure. Errors of keys set by
// nobody (defaults) are returned as they are.
func attribute(err error, sources map[string]Source) error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, attribute(e, sources))
		}
		return errors.Join(out...)
	}
	if ke, ok := err.(*KeyError); ok && ke.Source.Kind == FromDefault {
		if src, ok := sources[ke.Key]; ok {
			return &KeyError{Key: ke.Key, Source: src, Err: ke.Err}
		}
	}
	return err
}

// Leaves returns the single errors that err joins (errors.Join), in
// order, or err itself: each is one line to show.
func Leaves(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, Leaves(e)...)
		}
		return out
	}
	return []error{err}
}
