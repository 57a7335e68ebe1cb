package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nimbusha/nimbus/client"
	"github.com/nimbusha/nimbus/internal/testkit/testcluster"
)

func TestExitCodes(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
		code string
	}{
		{&usageError{errors.New("bad flag")}, exitUsage, ""},
		{errors.New("open x: no such file"), exitError, ""},
		{status.Error(codes.InvalidArgument, "x"), exitInvalid, "INVALID_ARGUMENT"},
		{&opError{op: "kill x", err: status.Error(codes.NotFound, "x")}, exitNotFound, "NOT_FOUND"},
		{status.Error(codes.AlreadyExists, "x"), exitExists, "ALREADY_EXISTS"},
		{status.Error(codes.FailedPrecondition, "x"), exitWrongStatus, "FAILED_PRECONDITION"},
		{status.Error(codes.Unauthenticated, "x"), exitDenied, "UNAUTHENTICATED"},
		{status.Error(codes.PermissionDenied, "x"), exitDenied, "PERMISSION_DENIED"},
		{status.Error(codes.Unavailable, "x"), exitUnavailable, "UNAVAILABLE"},
		{status.Error(codes.ResourceExhausted, "x"), exitUnavailable, "RESOURCE_EXHAUSTED"},
		{status.Error(codes.Aborted, "x"), exitUnavailable, "ABORTED"},
		{fmt.Errorf("submit: %w", context.DeadlineExceeded), exitUnavailable, "DEADLINE_EXCEEDED"},
		{&client.NoSeedAnsweredError{}, exitUnavailable, "UNAVAILABLE"},
		{&client.NoLeaderError{Err: errors.New("x")}, exitUnavailable, "UNAVAILABLE"},
		{status.Error(codes.Internal, "x"), exitError, "INTERNAL"},
		{status.Error(codes.Unimplemented, "x"), exitError, "UNIMPLEMENTED"},
		{context.Canceled, exitError, "CANCELLED"},
	} {
		if got := exitCode(tc.err); got != tc.want {
			t.Errorf("exitCode(%v) = %d, want %d", tc.err, got, tc.want)
		}
		code, ok := errorCode(tc.err)
		if got := map[bool]string{true: codeName(code)}[ok]; got != tc.code {
			t.Errorf("errorCode(%v) = %q, want %q", tc.err, got, tc.code)
		}
	}
}

func TestHelpDocumentsExitCodes(t *testing.T) {
	out := runOK(t, "--help")
	for _, want := range []string{"Exit codes:", "4  not found", "8  unavailable", "~/.storm/storm.yaml"} {
		if !strings.Contains(out, want) {
			t.Errorf("--help lacks %q:\n%s", want, out)
		}
	}
}

// jsonErrorOf parses a JSON error from stderr.
func jsonErrorOf(t *testing.T, stderr string) jsonError {
	t.Helper()
	var e jsonError
	if err := json.Unmarshal([]byte(stderr), &e); err != nil {
		t.Fatalf("stderr is not a JSON error: %v\n%s", err, stderr)
	}
	return e
}

func TestRunJSONErrors(t *testing.T) {
	// A usage error: no code, exit 2.
	code, stdout, stderr := runArgs("-o", "json", "kill")
	e := jsonErrorOf(t, stderr)
	if code != exitUsage || stdout != "" || e.Error.ExitCode != exitUsage || e.Error.Code != "" ||
		e.Error.Message != "kill: missing NAME (see 'stormctl --help')" {
		t.Errorf("exit %d, stdout %q, error %+v", code, stdout, e.Error)
	}
	// No nimbus answering: UNAVAILABLE, exit 8.
	addr := testcluster.ClosedAddr(t)
	code, _, stderr = runArgs("--seeds", addr, "-o", "json", "leader")
	e = jsonErrorOf(t, stderr)
	if code != exitUnavailable || e.Error.Code != "UNAVAILABLE" || e.Error.ExitCode != exitUnavailable ||
		e.Error.Message != "no nimbus answered at "+addr+" (connection refused)" {
		t.Errorf("exit %d, error %+v", code, e.Error)
	}
}

// writeConf writes a storm.yaml naming seeds in dir.
func writeConf(t *testing.T, dir, seeds string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "storm.yaml"), []byte("nimbus.seeds: ["+seeds+"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestRunReadsStormYAMLLikeStorm(t *testing.T) {
	home, confDir := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv(confDirEnv, "")
	t.Setenv(seedsEnv, "")
	fromHome, fromConfDir, fromFlag := testcluster.ClosedAddr(t), testcluster.ClosedAddr(t), testcluster.ClosedAddr(t)
	seedsTried := func(args ...string) string {
		t.Helper()
		_, _, stderr := runArgs(append(args, "leader")...)
		return stderr
	}

	writeConf(t, filepath.Join(home, ".storm"), fromHome)
	if got := seedsTried(); !strings.Contains(got, fromHome) {
		t.Errorf("~/.storm/storm.yaml: %q, want %s", got, fromHome)
	}
	// STORM_CONF_DIR without a storm.yaml: still ~/.storm.
	t.Setenv(confDirEnv, confDir)
	if got := seedsTried(); !strings.Contains(got, fromHome) {
		t.Errorf("empty STORM_CONF_DIR: %q, want %s", got, fromHome)
	}
	writeConf(t, confDir, fromConfDir)
	if got := seedsTried(); !strings.Contains(got, fromConfDir) {
		t.Errorf("$STORM_CONF_DIR/storm.yaml: %q, want %s", got, fromConfDir)
	}
	// --config wins over both; the environment and --seeds over files.
	other := filepath.Join(t.TempDir(), "other")
	writeConf(t, other, fromFlag)
	if got := seedsTried("--config", filepath.Join(other, "storm.yaml")); !strings.Contains(got, fromFlag) {
		t.Errorf("--config: %q, want %s", got, fromFlag)
	}
	t.Setenv(seedsEnv, fromFlag)
	if got := seedsTried(); !strings.Contains(got, fromFlag) {
		t.Errorf("%s: %q, want %s", seedsEnv, got, fromFlag)
	}
	if got := seedsTried("--seeds", fromHome); !strings.Contains(got, fromHome) {
		t.Errorf("--seeds: %q, want %s", got, fromHome)
	}
}
