//go:build unix

package runtime

import (
	"os/exec"
	"syscall"
)

// ownGroup starts the program in a process group of its own, so that stopping it stops what it
// started too.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// stopGroup asks the program's process group to stop (SIGTERM); exec.Cmd's WaitDelay kills the
// program if it has not stopped in time, and endGroup kills what is left of the group.
func stopGroup(cmd *exec.Cmd) error {
	return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
}

// endGroup kills whatever the program left running in its group once it has ended.
func endGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
