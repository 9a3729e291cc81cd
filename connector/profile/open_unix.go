//go:build unix

package profile

import "syscall"

// openFlags open a profile's file never through a symbolic link (O_NOFOLLOW: opening one fails) and
// never waiting on a FIFO put in its place (O_NONBLOCK: what was opened is checked with fstat, and
// anything but a regular file is refused).
const openFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// noFollow says openFlags refuse a symbolic link by themselves.
const noFollow = true
