//go:build !linux

package brokertest

import "os/exec"

// setPdeathsig does nothing: only Linux kills a child when its parent dies.
func setPdeathsig(cmd *exec.Cmd) {}
