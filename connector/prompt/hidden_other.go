//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package prompt

import "golang.org/x/term"

// readHidden shows the prompt and reads a line with echo off (x/term's own way on this platform).
func readHidden(fd int, show func()) ([]byte, error) {
	show()
	return term.ReadPassword(fd)
}
