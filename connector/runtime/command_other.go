//go:build !unix

package runtime

import "os/exec"

func ownGroup(*exec.Cmd) {}

func stopGroup(cmd *exec.Cmd) error { return cmd.Process.Kill() }

func endGroup(*exec.Cmd) {}
