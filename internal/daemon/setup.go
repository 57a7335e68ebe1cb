package daemon

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/nimbusha/nimbus/cluster"
	"github.com/nimbusha/nimbus/codedistributor"
	_ "github.com/nimbusha/nimbus/codedistributor/backends" // the classes CheckClass knows
	"github.com/nimbusha/nimbus/configs"
	"github.com/nimbusha/nimbus/internal/logging"
	"github.com/nimbusha/nimbus/internal/version"
)

// versionFlag prints the version and exits.
const versionFlag = "version"

// Exit codes of a daemon's main.
const (
	ExitOK     = 0
	ExitFailed = 1 // the daemon failed to start, or failed while running
	ExitUsage  = 2 // the command line or the configuration is wrong
)

// Setup parses args for the daemon called name, with a flag for each of
// keys, and returns its validated configuration and logger. When the
// daemon is not to start it returns ok false with the exit code, having
// said why: --help (usage) and --version on stdout, code 0; a wrong
// command line (unknown flag, bad flag value, stray argument) on stderr
// with the usage, code 2; a bad configuration on stderr, one line per
// problem, each naming where the value came from, code 2.
func Setup(name string, args []string, stdout, stderr io.Writer, keys []string) (cfg *configs.Config, log *slog.Logger, code int, ok bool) {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { writeUsage(stdout, name, fs) } // --help: asked for, so on stdout
	showVersion := fs.Bool(versionFlag, false, "print the version and exit")
	configs.RegisterFlags(fs, keys...)

	// The usage comes first and the error last, where a terminal's
	// bottom line and systemctl status show it.
	usageError := func(err error) (*configs.Config, *slog.Logger, int, bool) {
		writeUsage(stderr, name, fs)
		fmt.Fprintf(stderr, "\n%s: %v\n", name, err)
		return nil, nil, ExitUsage, false
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil, nil, ExitOK, false
		}
		return usageError(flagError(name, fs, err))
	}
	if *showVersion {
		fmt.Fprintln(stdout, version.String(name))
		return nil, nil, ExitOK, false
	}
	if fs.NArg() > 0 {
		return usageError(strayArguments(name, fs, args))
	}

	cfg, warnings, err := configs.Load(fs)
	if err == nil {
		err = cfg.ValidateServer()
	}
	if err == nil && slices.Contains(keys, configs.KeySupervisorGRPCPort) { // a supervisor's keys
		err = cfg.ValidateSupervisor()
	}
	if err == nil {
		err = codedistributor.CheckClass(cfg.CodeDistributorClass) // before anything touches ZooKeeper
	}
	if err == nil {
		_, err = LoadZKTLS(cfg, slog.New(slog.DiscardHandler)) // the daemon loads it again, and logs it
	}
	if err != nil {
		problems := configs.Leaves(err)
		if fromFlag(problems) {
			writeUsage(stderr, name, fs)
			fmt.Fprintln(stderr)
		}
		for _, p := range problems {
			fmt.Fprintf(stderr, "%s: %v\n", name, p)
		}
		return nil, nil, ExitUsage, false
	}
	log, err = logging.New(stderr, cfg.LogLevel, cfg.LogFormat)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return nil, nil, ExitUsage, false
	}
	for _, w := range warnings {
		log.Warn("configuration", "warning", w)
	}
	return cfg, log, ExitOK, true
}

func writeUsage(w io.Writer, name string, fs *pflag.FlagSet) {
	fmt.Fprintf(w, "Usage: %s [--config FILE] [flags]\n\n"+
		"Flags override STORM_* environment variables, which override the file.\n\n%s",
		name, fs.FlagUsages())
}

// flagError adds to pflag's error what the operator needs: for an unknown
// flag, the flag it is close to, or, when it names a key this daemon takes
// only from the file or the environment, where to set it.
func flagError(name string, fs *pflag.FlagSet, err error) error {
	typed, ok := configs.UnknownFlag(err)
	if !ok {
		return err
	}
	for _, key := range configs.Keys() {
		if strings.EqualFold(key, typed) && fs.Lookup(key) == nil {
			return fmt.Errorf("%w: %s is a key that %s does not take as a flag; set it in the --config file or as %s",
				err, key, name, configs.EnvName(key))
		}
	}
	return configs.SuggestFlag(fs, err)
}

// strayArguments refuses what is left after the flags, naming it. A
// daemon takes no arguments, so a word here is a mistake: most often the
// value of a bool flag given apart (--nimbus.grpc.tls.enable false),
// which must be joined with '='.
func strayArguments(name string, fs *pflag.FlagSet, args []string) error {
	stray := fs.Args()
	quoted := make([]string, len(stray))
	for i, a := range stray {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	err := fmt.Errorf("unexpected argument %s: %s takes flags only", strings.Join(quoted, ", "), name)
	for i, a := range args {
		if i == 0 || a != stray[0] {
			continue
		}
		prev := strings.TrimPrefix(args[i-1], "--")
		if f := fs.Lookup(prev); f != nil && f.NoOptDefVal != "" && !strings.Contains(args[i-1], "=") {
			return fmt.Errorf("%w (a bool flag's value follows '=': --%s=%s)", err, prev, a)
		}
		break
	}
	return err
}

// fromFlag reports whether any problem is with a value given as a flag:
// then the command line is wrong, and the usage is shown too.
func fromFlag(problems []error) bool {
	for _, p := range problems {
		var ke *configs.KeyError
		if errors.As(p, &ke) && ke.Source.Kind == configs.FromFlag {
			return true
		}
	}
	return false
}

// SessionConfig is how the daemon described by cfg reaches ZooKeeper: the
// servers, the session, the root, TLS, and the digest credentials that give
// the nodes it creates their ACL. With storm.zookeeper.ssl.enable and TLS
// material that cannot be loaded (Setup has checked it, but a file may have
// changed since), the session's every handshake fails with the reason:
// never plaintext.
func SessionConfig(cfg *configs.Config, log *slog.Logger) cluster.SessionConfig {
	zkTLS, err := LoadZKTLS(cfg, log)
	if err != nil {
		zkTLS = &cluster.TLS{Config: func(string) *tls.Config { return refuseAll(err) }, Check: zkTLSCheck}
	}
	return cluster.SessionConfig{
		TLS:            zkTLS,
		Servers:        cfg.ZKServers(),
		SessionTimeout: cfg.ZKSessionTimeout,
		ConnectTimeout: cfg.ZKConnectionTimeout,
		Root:           cfg.ZKRoot,
		AuthScheme:     cfg.ZKAuthScheme,
		AuthPayload:    cfg.ZKAuthPayload,
		SuperACL:       cfg.ZKSuperACL,
		Logger:         log,
	}
}
