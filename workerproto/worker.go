package workerproto

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// Worker is a worker's side of the protocol. The zero value, or one from
// FromEnv without the variables (a worker started by hand), is always
// Active and reports errors nowhere.
type Worker struct {
	StatusFile   string // STORM_STATUS_FILE; "" for none
	ErrorFile    string // STORM_ERROR_FILE; "" for none
	MetricsFile  string // STORM_METRICS_FILE; "" for none
	LogLevelFile string // STORM_LOG_LEVEL_FILE; "" for none
	BlobsFile    string // STORM_BLOBS_FILE; "" for none
}

// FromEnv reads the protocol's variables through getenv (os.Getenv).
func FromEnv(getenv func(string) string) Worker {
	return Worker{
		StatusFile: getenv(EnvStatusFile), ErrorFile: getenv(EnvErrorFile),
		MetricsFile: getenv(EnvMetricsFile), LogLevelFile: getenv(EnvLogLevelFile),
		BlobsFile: getenv(EnvBlobsFile),
	}
}

// Status reads the status file once. Without one it is Active.
func (w Worker) Status() (Status, error) {
	if w.StatusFile == "" {
		return Active, nil
	}
	b, err := os.ReadFile(w.StatusFile)
	if err != nil {
		return "", err
	}
	return ParseStatus(b)
}

// Watch delivers the worker's status: first the current one, then each
// new one after a StatusSignal. It subscribes to the signal before the
// first read, so no change is missed. A read that fails is passed to
// onErr and the last status stands (the first read's failure counts as
// Active). The channel is closed when ctx ends. Watch returns at once.
func (w Worker) Watch(ctx context.Context, onErr func(error)) <-chan Status {
	out := make(chan Status, 1)
	sig := make(chan os.Signal, 1)
	if w.StatusFile != "" {
		signal.Notify(sig, StatusSignal)
	}
	go func() {
		defer close(out)
		defer signal.Stop(sig)
		last := Status("")
		for {
			s, err := w.Status()
			if err != nil {
				onErr(err)
				s = last
				if s == "" {
					s = Active
				}
			}
			if s != last {
				select {
				case out <- s:
				case <-ctx.Done():
					return
				}
				last = s
			}
			select {
			case <-sig:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// ReportError appends msg, one line (line breaks become spaces), to the
// error file; its supervisor publishes the latest as the worker's last
// error. Without an error file it does nothing and returns nil.
func (w Worker) ReportError(msg string) error {
	if w.ErrorFile == "" {
		return nil
	}
	// Not O_CREATE: the supervisor made the file; a worker run as a user
	// could not create one there anyway.
	f, err := os.OpenFile(w.ErrorFile, os.O_WRONLY|os.O_APPEND|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	line := strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(msg)
	if _, err := fmt.Fprintln(f, line); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// WriteMetrics replaces the metrics file with m atomically (ReplaceFile),
// its version set. Without a metrics file it does nothing and returns nil.
func (w Worker) WriteMetrics(m Metrics) error {
	if w.MetricsFile == "" {
		return nil
	}
	b, err := EncodeMetrics(m)
	if err != nil {
		return err
	}
	return ReplaceFile(w.MetricsFile, b, nil)
}

// LogLevels reads the log-level file (ReadLogLevels). Without one, or
// while the file does not exist, there are no levels.
func (w Worker) LogLevels() (LogLevels, error) {
	if w.LogLevelFile == "" {
		return LogLevels{}, nil
	}
	return ReadLogLevels(w.LogLevelFile)
}

// Blobs reads the blobs file (ReadBlobs): the blobs placed in the
// worker's directory. Without one there are none.
func (w Worker) Blobs() (Blobs, error) {
	if w.BlobsFile == "" {
		return nil, nil
	}
	return ReadBlobs(w.BlobsFile)
}
