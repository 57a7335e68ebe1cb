package configs

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// ConfigFlag names the flag that points at the YAML file.
const ConfigFlag = "config"

// envPrefix starts every environment variable name.
const envPrefix = "STORM_"

// EnvName returns the environment variable that sets key: STORM_ plus the key
// in upper case with dots as underscores, without doubling a leading
// "storm." (storm.zookeeper.port -> STORM_ZOOKEEPER_PORT, nimbus.host ->
// STORM_NIMBUS_HOST).
func EnvName(key string) string {
	key = strings.TrimPrefix(key, "storm.")
	return envPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// RegisterFlags adds --config and one flag per given key, named exactly like
// the key, so each daemon exposes only the keys it cares about. It panics on
// a key this package does not know, which is a programming error.
func RegisterFlags(fs *pflag.FlagSet, keys ...string) {
	if fs.Lookup(ConfigFlag) == nil {
		fs.String(ConfigFlag, "", "YAML file with Storm keys (see configs/storm.yaml)")
	}
	def := Default()
	for _, key := range keys {
		f, ok := lookupField(key)
		if !ok {
			panic(fmt.Sprintf("configs: RegisterFlags: unknown key %q", key))
		}
		typ, text := describe(f.ptr(def))
		fs.Var(&flagValue{text: text, typ: typ}, key, f.usage+" (env "+EnvName(key)+")")
		if typ == "bool" {
			fs.Lookup(key).NoOptDefVal = "true" // --nimbus.grpc.tls.enable alone means true; false needs =false
		}
	}
}

// flagValue keeps a flag's text as typed. Load converts it exactly like an
// environment value, so both report the same errors; typ only shows in --help.
type flagValue struct{ text, typ string }

func (v *flagValue) String() string     { return v.text }
func (v *flagValue) Set(s string) error { v.text = s; return nil }
func (v *flagValue) Type() string       { return v.typ }

// Load builds a Config from the defaults, the file named by --config (if
// set), the environment and the flags in fs that were set on the command
// line, each overriding the one before. Every error is a KeyError naming
// where its value came from (file and line, variable, flag), or names the
// file it could not read. A key in the file, or a STORM_* variable, that
// this package does not know but that is close to one it knows is an
// error with a suggestion: a typo must not leave a key at its default.
// Other unknown keys in the file are returned as warnings, since Storm
// files carry many more. The Config returned has passed Validate and
// records where each value came from in its Sources. fs may be nil.
func Load(fs *pflag.FlagSet) (*Config, []string, error) {
	path := ""
	if fs != nil {
		if f := fs.Lookup(ConfigFlag); f != nil {
			path = f.Value.String()
		}
	}
	return load(path, fs)
}

// LoadFile is Load without flags: defaults, the file at path (none if path
// is empty) and the environment.
func LoadFile(path string) (*Config, []string, error) {
	return load(path, nil)
}

// keyDelimiter is viper's path separator: Storm's keys contain dots, so
// viper must not read "nimbus.grpc.port" as nested maps.
const keyDelimiter = "::"

// load merges the layers with viper (defaults < file < environment <
// flags, viper's own precedence) and tracks, beside it, where each value
// came from: viper can say neither which layer won nor on which line of the
// file a key was written (readFile's node pass says that).
func load(path string, fs *pflag.FlagSet) (*Config, []string, error) {
	v := viper.NewWithOptions(viper.KeyDelimiter(keyDelimiter))
	def := Default()
	sources := make(map[string]Source, len(fields))
	for _, f := range fields {
		// Defaults go in as text, so they take the same conversion
		// path as environment and flag values.
		_, text := describe(f.ptr(def))
		v.SetDefault(f.key, text)
		sources[f.key] = Source{}
	}

	var warnings []string
	var problems []error // unknown keys that look like typos: reported with the rest
	if path != "" {
		file, err := readFile(path)
		if err != nil {
			return nil, nil, err
		}
		v.SetConfigType("yaml")
		if err := v.ReadConfig(bytes.NewReader(file.body)); err != nil {
			return nil, nil, fmt.Errorf("configs: parse %s: %w", path, err)
		}
		for key, s := range file.values {
			sources[key] = s.src
		}
		warnings, problems = file.warnings, file.typos
	}

	problems = append(problems, unknownEnv(os.Environ())...)
	for _, f := range fields {
		// viper takes an empty variable as unset (AllowEmptyEnv is
		// off), so a blank export cannot erase a file's value.
		if err := v.BindEnv(f.key, EnvName(f.key)); err != nil {
			return nil, nil, fmt.Errorf("configs: %s: %w", f.key, err)
		}
		if os.Getenv(EnvName(f.key)) != "" {
			sources[f.key] = Source{Kind: FromEnv, Name: EnvName(f.key)}
		}
	}

	if fs != nil {
		// Only flags set on the command line count, so a flag's default
		// never hides the environment or the file. Changed, not Visit: a
		// command framework (cobra) may parse a flag of this set through
		// another set that shares it, which Visit does not see.
		var bindErr error
		fs.VisitAll(func(fl *pflag.Flag) {
			if f, ok := lookupField(fl.Name); ok && bindErr == nil {
				bindErr = v.BindFlagValue(f.key, textFlag{fl})
				if fl.Changed {
					sources[f.key] = Source{Kind: FromFlag, Name: fl.Name}
				}
			}
		})
		if bindErr != nil {
			return nil, nil, fmt.Errorf("configs: %w", bindErr)
		}
	}

	c := &Config{}
	errs := problems
	for _, f := range fields {
		if err := decode(f.ptr(c), v.Get(f.key), f.unit); err != nil {
			errs = append(errs, &KeyError{Key: f.key, Source: sources[f.key], Err: err})
		}
	}
	if len(errs) > len(problems) { // a value that did not convert: c is incomplete
		return nil, warnings, errors.Join(errs...)
	}
	if err := errors.Join(append(errs, attribute(c.Validate(), sources))...); err != nil {
		return nil, warnings, err
	}
	c.Sources, c.File = sources, path
	return c, warnings, nil
}

// textFlag hands viper a flag's text as typed: viper converts a flag by its
// type name and turns a bad number into 0 without a word, while decode
// converts it exactly like an environment value and says what is wrong.
type textFlag struct{ fl *pflag.Flag }

func (t textFlag) HasChanged() bool    { return t.fl.Changed }
func (t textFlag) Name() string        { return t.fl.Name }
func (t textFlag) ValueString() string { return t.fl.Value.String() }
func (t textFlag) ValueType() string   { return "string" }

// describe returns the flag type name and the text form of the field p
// points to.
func describe(p any) (typ, text string) {
	switch p := p.(type) {
	case *string:
		return "string", *p
	case *bool:
		return "bool", strconv.FormatBool(*p)
	case *int:
		return "int", strconv.Itoa(*p)
	case *int64:
		return "int", strconv.FormatInt(*p, 10)
	case *time.Duration:
		return "duration", p.String()
	case *[]string:
		return "strings", strings.Join(*p, ",")
	case *[]int:
		s := make([]string, len(*p))
		for i, n := range *p {
			s[i] = strconv.Itoa(n)
		}
		return "ints", strings.Join(s, ",")
	}
	panic(fmt.Sprintf("configs: unsupported field type %T", p))
}

// decode converts raw into the field p points to. raw is text (defaults,
// environment, flags) or whatever YAML produced.
func decode(p any, raw any, unit time.Duration) error {
	var err error
	switch p := p.(type) {
	case *string:
		*p, err = toString(raw)
	case *bool:
		*p, err = toBool(raw)
	case *int:
		*p, err = toInt(raw)
	case *int64:
		*p, err = toInt64(raw)
	case *time.Duration:
		*p, err = toDuration(raw, unit)
	case *[]string:
		*p, err = toStrings(raw)
	case *[]int:
		*p, err = toInts(raw)
	default:
		panic(fmt.Sprintf("configs: unsupported field type %T", p))
	}
	return err
}

func toString(raw any) (string, error) {
	switch x := raw.(type) {
	case nil:
		return "", nil
	case string:
		return x, nil
	case int, int64, uint64, float64, bool:
		return fmt.Sprint(x), nil // e.g. hdfs.user: 1000
	}
	return "", notA(raw, "a string")
}

func toBool(raw any) (bool, error) {
	switch x := raw.(type) {
	case bool:
		return x, nil
	case string:
		if b, err := strconv.ParseBool(strings.TrimSpace(x)); err == nil {
			return b, nil
		}
	}
	return false, notA(raw, "true or false")
}

func toInt64(raw any) (int64, error) {
	switch x := raw.(type) {
	case int:
		return int64(x), nil
	case int64:
		return x, nil
	case float64:
		if x == math.Trunc(x) && x >= math.MinInt64 && x < math.MaxInt64 {
			return int64(x), nil
		}
	case string:
		if n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64); err == nil {
			return n, nil
		}
	}
	return 0, notA(raw, "an integer")
}

func toInt(raw any) (int, error) {
	n, err := toInt64(raw)
	if err != nil {
		return 0, err
	}
	if n < math.MinInt || n > math.MaxInt {
		return 0, fmt.Errorf("%d is too large", n)
	}
	return int(n), nil
}

func toDuration(raw any, unit time.Duration) (time.Duration, error) {
	if s, ok := raw.(string); ok {
		return parseDuration(s, unit)
	}
	n, err := toInt64(raw)
	if err != nil {
		return 0, notA(raw, durationWant(unit))
	}
	return scale(n, unit)
}

// parseDuration reads s as a whole number of unit, as Storm writes it, or as
// a Go duration such as "5s" or "500ms".
func parseDuration(s string, unit time.Duration) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return scale(n, unit)
	}
	if d, err := time.ParseDuration(s); err == nil {
		return d, nil
	}
	return 0, notA(s, durationWant(unit))
}

func scale(n int64, unit time.Duration) (time.Duration, error) {
	if n > math.MaxInt64/int64(unit) || n < math.MinInt64/int64(unit) {
		return 0, fmt.Errorf("%d is too large", n)
	}
	return time.Duration(n) * unit, nil
}

func durationWant(unit time.Duration) string {
	name := "seconds"
	if unit == time.Millisecond {
		name = "milliseconds"
	}
	return `a duration (whole ` + name + ` or a Go duration like "5s")`
}

// toStrings accepts a YAML list or comma-separated text ("a,b, c"); blanks
// around entries and empty entries in text are dropped.
func toStrings(raw any) ([]string, error) {
	switch x := raw.(type) {
	case nil:
		return []string{}, nil
	case string:
		return splitList(x), nil
	case []any:
		out := make([]string, len(x))
		for i, e := range x {
			s, err := toString(e)
			if err != nil {
				return nil, err
			}
			out[i] = s
		}
		return out, nil
	}
	return nil, notA(raw, "a list")
}

func toInts(raw any) ([]int, error) {
	var entries []any
	switch x := raw.(type) {
	case nil:
	case string:
		for _, s := range splitList(x) {
			entries = append(entries, s)
		}
	case []any:
		entries = x
	default:
		entries = []any{x} // a single number
	}
	out := make([]int, len(entries))
	for i, e := range entries {
		n, err := toInt(e)
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}

func splitList(s string) []string {
	out := []string{}
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// notA reports that raw is not what was wanted, quoting text so that blanks
// and empty values are visible.
func notA(raw any, want string) error {
	if s, ok := raw.(string); ok {
		return fmt.Errorf("%q is not %s", s, want)
	}
	return fmt.Errorf("%v is not %s", raw, want)
}
