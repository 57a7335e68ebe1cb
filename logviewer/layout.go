package logviewer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"

	"go.yaml.in/yaml/v3"
)

// The layout of workers' logs, Storm's names.
const (
	// ArtifactsDir is the root of all workers' logs, under storm.local.dir.
	ArtifactsDir = "workers-artifacts"
	// LogName is a worker's current log; LogName.1 ... LogName.<Rotated>
	// are its rotated files, .1 the newest.
	LogName = "worker.log"
	// MetaName records whose logs a worker's directory holds.
	MetaName = "worker.yaml"
	// Rotated is how many rotated files a worker keeps: Storm's worker
	// log4j configuration keeps 9.
	Rotated = 9

	rootMode = 0o711 // others may pass through to their own worker's directory, not list it
	DirMode  = 0o750 // a topology's and a worker's directory
	FileMode = 0o640 // a worker's log and worker.yaml
)

// logName matches the names of a worker's logs: worker.log, worker.log.N.
var logName = regexp.MustCompile(`^worker\.log(\.[1-9][0-9]{0,2})?$`)

// Root is the root of the workers' logs of a supervisor whose
// storm.local.dir is localDir.
func Root(localDir string) string { return filepath.Join(localDir, ArtifactsDir) }

// WorkerDir is the directory of the logs of the worker of topologyID on
// port.
func WorkerDir(root, topologyID string, port int32) string {
	return filepath.Join(root, topologyID, strconv.Itoa(int(port)))
}

// Rotation is how a worker's log rotates so that it and its Rotated files
// together stay within perWorkerMB (logviewer.max.per.worker.logs.size.mb):
// each file holds a tenth.
func Rotation(perWorkerMB int) (maxBytes int64, keep int) {
	return max(int64(perWorkerMB)<<20/(Rotated+1), 1), Rotated
}

// Meta is a worker directory's worker.yaml: whose logs these are. Its keys
// are Storm's, topology.users added.
type Meta struct {
	TopologyID    string   `yaml:"storm-id"`
	Owner         string   `yaml:"user"`
	TopologyUsers []string `yaml:"topology.users,omitempty"`
	LogsUsers     []string `yaml:"logs.users,omitempty"`
}

// Prepare makes the directory of the worker of m.TopologyID on port under
// root and writes its worker.yaml, each with the modes of the package
// comment and, when gid is not -1, that group: the group of the user the
// worker runs as. A symlink in place of any of them is refused. It returns
// the directory.
func Prepare(root string, port int32, m Meta, gid int) (string, error) {
	if err := mkdir(root, rootMode, -1); err != nil {
		return "", err
	}
	topo := filepath.Join(root, m.TopologyID)
	if err := mkdir(topo, DirMode, gid); err != nil {
		return "", err
	}
	dir := WorkerDir(root, m.TopologyID, port)
	if err := mkdir(dir, DirMode, gid); err != nil {
		return "", err
	}
	data, err := yaml.Marshal(m)
	if err != nil {
		return "", err
	}
	// Written aside and renamed: a reader never sees half of it, and a
	// symlink planted at its name is replaced, not followed.
	tmp := filepath.Join(dir, "."+MetaName+".tmp")
	_ = os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY|syscall.O_NOFOLLOW, FileMode)
	if err != nil {
		return "", err
	}
	_, werr := f.Write(data)
	if werr == nil && gid >= 0 {
		werr = f.Chown(-1, gid)
	}
	if werr == nil {
		werr = f.Chmod(FileMode)
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp, filepath.Join(dir, MetaName))
	}
	if werr != nil {
		_ = os.Remove(tmp)
		return "", fmt.Errorf("logviewer: %s: %w", MetaName, werr)
	}
	return dir, nil
}

// mkdir makes dir if it is missing, refuses a symlink or a file in its
// place, and sets its mode and, unless gid is -1, its group.
func mkdir(dir string, mode os.FileMode, gid int) error {
	if err := os.Mkdir(dir, mode); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("logviewer: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("logviewer: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("logviewer: %s is not a directory (%v)", dir, fi.Mode().Type())
	}
	if gid >= 0 {
		if err := os.Lchown(dir, -1, gid); err != nil {
			return fmt.Errorf("logviewer: %w", err)
		}
	}
	if err := os.Chmod(dir, mode); err != nil {
		return fmt.Errorf("logviewer: %w", err)
	}
	return nil
}

// readMeta reads a worker directory's worker.yaml under root (rel is
// <topology-id>/<port>).
func readMeta(root *os.Root, rel string) (Meta, error) {
	var m Meta
	f, err := root.OpenFile(filepath.Join(rel, MetaName), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return m, err
	}
	defer f.Close()
	if err := yaml.NewDecoder(ioLimit(f, 64<<10)).Decode(&m); err != nil {
		return m, fmt.Errorf("logviewer: %s/%s: %w", rel, MetaName, err)
	}
	return m, nil
}
