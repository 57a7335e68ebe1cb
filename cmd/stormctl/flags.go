package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

// Parsing of the flag values that pflag leaves as strings or ints. Every
// error is a *usageError naming the flag and the value.

// exactArgs accepts exactly the named positional arguments.
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) < len(names):
			return &usageError{fmt.Errorf("%s: missing %s", cmd.Name(), strings.Join(names[len(args):], " and "))}
		case len(args) > len(names):
			return &usageError{fmt.Errorf("%s takes %s, got an extra argument %q", cmd.Name(), strings.Join(names, " "), args[len(names)])}
		}
		return nil
	}
}

// int32Flag checks an int flag's value against [lo, MaxInt32].
func int32Flag(name string, v, lo int) (int32, error) {
	if v < lo || v > math.MaxInt32 {
		return 0, &usageError{fmt.Errorf("--%s %d: want a whole number from %d to %d", name, v, lo, math.MaxInt32)}
	}
	return int32(v), nil
}

// optionalInt32 is an int flag that the server defaults when it is not
// given: nil unless the user set it.
func optionalInt32(cmd *cobra.Command, name string, v, lo int) (*int32, error) {
	if !cmd.Flags().Changed(name) {
		return nil, nil
	}
	n, err := int32Flag(name, v, lo)
	if err != nil {
		return nil, err
	}
	return &n, nil
}

// componentCount is one ID=PARALLELISM value.
type componentCount struct {
	id string
	n  int32
}

// parseComponents parses repeated ID=PARALLELISM values of --flag, in the
// order given. Parallelism is at least 1; an id may appear once.
func parseComponents(flag string, vals []string) ([]componentCount, error) {
	out := make([]componentCount, 0, len(vals))
	seen := make(map[string]bool, len(vals))
	for _, v := range vals {
		id, num, ok := strings.Cut(v, "=")
		if !ok || id == "" || num == "" {
			return nil, &usageError{fmt.Errorf("--%s %q: want ID=PARALLELISM", flag, v)}
		}
		n, err := strconv.ParseInt(num, 10, 32)
		if err != nil || n < 1 {
			return nil, &usageError{fmt.Errorf("--%s %q: parallelism %q: want a whole number from 1 to %d", flag, v, num, math.MaxInt32)}
		}
		if seen[id] {
			return nil, &usageError{fmt.Errorf("--%s %q: component %q given twice", flag, v, id)}
		}
		seen[id] = true
		out = append(out, componentCount{id: id, n: int32(n)})
	}
	return out, nil
}

// parseConf parses repeated KEY=VALUE values of --flag. The value may be
// empty or contain '='; a key may appear once.
func parseConf(flag string, vals []string) (map[string]string, error) {
	out := make(map[string]string, len(vals))
	for _, v := range vals {
		k, val, ok := strings.Cut(v, "=")
		if !ok || k == "" {
			return nil, &usageError{fmt.Errorf("--%s %q: want KEY=VALUE", flag, v)}
		}
		if _, dup := out[k]; dup {
			return nil, &usageError{fmt.Errorf("--%s %q: key %q given twice", flag, v, k)}
		}
		out[k] = val
	}
	return out, nil
}
