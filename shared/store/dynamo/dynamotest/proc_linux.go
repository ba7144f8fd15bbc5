package dynamotest

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal makes the kernel kill the emulator when the test
// binary dies without running its clean-up (a panic, a timeout).
func setParentDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
