package mesostest

import "syscall"

// sysProcAttr puts the task in its own process group (so that the whole
// tree can be signalled) and has the kernel SIGKILL it if the test
// process dies without calling Close.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
