//go:build unix && !linux

package testenv

import "syscall"

// sysProcAttr puts a server in its own process group, which Stop signals.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
