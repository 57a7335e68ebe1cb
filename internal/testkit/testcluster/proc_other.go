//go:build unix && !linux

package testcluster

import "syscall"

// sysProcAttr puts a server in its own process group, which Stop signals.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
