package keeper

import (
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// maxSocketPath is what a Unix socket's address may hold (sun_path, less
// its terminating NUL).
const maxSocketPath = 107

// socketAddr is an address that reaches the socket at path, whatever its
// length: path itself when it fits, else the same file through a
// descriptor of its directory (/proc/self/fd/N/name), which done closes
// once the socket is bound or connected. A supervisor's directory is
// storm.local.dir's, which may be long.
func socketAddr(path string) (addr string, done func(), err error) {
	if len(path) <= maxSocketPath {
		return path, func() {}, nil
	}
	fd, err := unix.Open(filepath.Dir(path), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", nil, fmt.Errorf("keeper: %s: %w", filepath.Dir(path), err)
	}
	addr = fmt.Sprintf("/proc/self/fd/%d/%s", fd, filepath.Base(path))
	if len(addr) > maxSocketPath {
		unix.Close(fd)
		return "", nil, fmt.Errorf("keeper: socket name %q too long", filepath.Base(path))
	}
	return addr, func() { unix.Close(fd) }, nil
}
