package logviewer

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"
)

// logFile is one log on disk, for Enforce.
type logFile struct {
	path     string
	size     int64
	modified time.Time
	rotated  bool // worker.log.N
	running  bool // its worker runs here now
}

// Enforce keeps the sum of all workers' logs under root within maxBytes
// (logviewer.max.sum.worker.logs.size.mb): it deletes rotated files and
// the logs of workers that no longer run here, oldest first, and then the
// directories those left empty but for worker.yaml.
// A running worker's current log is never deleted: its keeper writes to
// it. running says whether the worker of a topology on a port runs here.
// It returns the bytes it deleted.
func Enforce(root string, maxBytes int64, running func(topology string, port int32) bool) (int64, error) {
	files, err := scan(root, running)
	if err != nil {
		return 0, err
	}
	var total int64
	for _, f := range files {
		total += f.size
	}
	slices.SortFunc(files, func(a, b logFile) int { return a.modified.Compare(b.modified) })
	var freed int64
	for _, f := range files {
		if total <= maxBytes {
			break
		}
		if !f.rotated && f.running {
			continue
		}
		if err := os.Remove(f.path); err == nil {
			total -= f.size
			freed += f.size
		}
	}
	removeGone(root, running)
	return freed, nil
}

// scan lists every worker's logs under root.
func scan(root string, running func(string, int32) bool) ([]logFile, error) {
	topologies, err := os.ReadDir(root)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []logFile
	for _, t := range topologies {
		if !t.IsDir() {
			continue
		}
		ports, _ := os.ReadDir(filepath.Join(root, t.Name()))
		for _, p := range ports {
			port, err := strconv.Atoi(p.Name())
			if err != nil || !p.IsDir() {
				continue
			}
			dir := filepath.Join(root, t.Name(), p.Name())
			logs, _ := os.ReadDir(dir)
			for _, l := range logs {
				if !logName.MatchString(l.Name()) {
					continue
				}
				fi, err := l.Info()
				if err != nil || !fi.Mode().IsRegular() {
					continue
				}
				out = append(out, logFile{path: filepath.Join(dir, l.Name()), size: fi.Size(), modified: fi.ModTime(),
					rotated: l.Name() != LogName, running: running(t.Name(), int32(port))})
			}
		}
	}
	return out, nil
}

// removeGone removes the directories of workers not running here whose
// logs are all gone, and then their topologies' directories left empty.
func removeGone(root string, running func(string, int32) bool) {
	topologies, _ := os.ReadDir(root)
	for _, t := range topologies {
		tdir := filepath.Join(root, t.Name())
		ports, _ := os.ReadDir(tdir)
		left := 0
		for _, p := range ports {
			port, err := strconv.Atoi(p.Name())
			dir := filepath.Join(tdir, p.Name())
			if err != nil || running(t.Name(), int32(port)) || hasLogs(dir) {
				left++
				continue
			}
			_ = os.Remove(filepath.Join(dir, MetaName))
			if os.Remove(dir) != nil {
				left++
			}
		}
		if left == 0 {
			_ = os.Remove(tdir)
		}
	}
}

func hasLogs(dir string) bool {
	entries, _ := os.ReadDir(dir)
	return slices.ContainsFunc(entries, func(e os.DirEntry) bool { return logName.MatchString(e.Name()) })
}
