package logviewer

import (
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// FileIDHeader names the file an answer of /log was read from: its device
// and inode, and its birth time where the file system keeps one. A
// follower that reads worker.log by offsets compares it from one read to
// the next: another identity is another file, a rotation, even one whose
// new worker.log has already grown past the old offset. It is opaque:
// equal means the same file.
const FileIDHeader = "X-Log-File-Id"

// fileID is f's identity, as FileIDHeader says.
func fileID(f *os.File, fi os.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	id := strconv.FormatUint(st.Dev, 16) + "-" + strconv.FormatUint(st.Ino, 16)
	var stx unix.Statx_t
	if err := unix.Statx(int(f.Fd()), "", unix.AT_EMPTY_PATH, unix.STATX_BTIME, &stx); err == nil && stx.Mask&unix.STATX_BTIME != 0 {
		id += "-" + strconv.FormatInt(stx.Btime.Sec, 16) + "." + strconv.FormatUint(uint64(stx.Btime.Nsec), 16)
	}
	return id
}
