package brokertest

import (
	"os/exec"
	"syscall"
)

// setPdeathsig has the kernel kill cmd's process when the test binary dies.
func setPdeathsig(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
