package e2e

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel send the launcher SIGTERM when the test
// binary dies without stopping it (a panic, a timeout); the launcher then
// stops its children, which also die with it (PR_SET_PDEATHSIG).
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
