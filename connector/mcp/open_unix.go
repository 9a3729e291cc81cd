//go:build unix

package mcp

import "syscall"

// openFlags open an image never through a symbolic link in its last part and never waiting on a FIFO
// (what was opened is checked with fstat).
const openFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK
