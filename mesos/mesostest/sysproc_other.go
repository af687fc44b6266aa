//go:build unix && !linux

package mesostest

import "syscall"

// sysProcAttr puts the task in its own process group so that the whole
// tree can be signalled.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
