package workerproto

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// ErrTooLarge is a protocol file longer than its reader accepts.
var ErrTooLarge = errors.New("workerproto: file too large")

// ErrNotRegular is a protocol file that is not a regular file (a FIFO, a
// device, a directory): never read, since reading one could block or never
// end.
var ErrNotRegular = errors.New("workerproto: not a regular file")

// ReplaceFile replaces the file at path with data atomically: it writes a
// temporary file in the same directory, lets prepare (if not nil) set its
// owner or mode, and renames it over path, so a reader sees the old content
// or the new, never a mix. The temporary file is removed on failure.
func ReplaceFile(path string, data []byte, prepare func(*os.File) error) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if prepare != nil {
		if err := prepare(f); err != nil {
			return err
		}
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// ReadFile reads the file at path, at most limit bytes, not following a
// symbolic link in its place and never blocking on a FIFO. A longer file is
// ErrTooLarge, one that is not a regular file ErrNotRegular; info is the
// file's, from the descriptor read.
func ReadFile(path string, limit int64) (data []byte, info os.FileInfo, err error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if info, err = f.Stat(); err != nil {
		return nil, nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, info, fmt.Errorf("%w: %s is %v", ErrNotRegular, path, info.Mode().Type())
	}
	if info.Size() > limit {
		return nil, info, fmt.Errorf("%w: %s is %d bytes, more than %d", ErrTooLarge, path, info.Size(), limit)
	}
	data, err = io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, info, err
	}
	if int64(len(data)) > limit { // it grew since the stat
		return nil, info, fmt.Errorf("%w: %s is more than %d bytes", ErrTooLarge, path, limit)
	}
	return data, info, nil
}
