//go:build unix

package cli

import "syscall"

// logOpenFlags open the mcp log never through a symbolic link.
const logOpenFlags = syscall.O_NOFOLLOW
