package testcluster

import "syscall"

// sysProcAttr puts a server in its own process group, which Stop signals,
// and kills it if the test process dies without stopping it.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
