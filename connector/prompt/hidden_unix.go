//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package prompt

import (
	"errors"
	"io"

	"golang.org/x/sys/unix"
)

// maxLine bounds a typed line.
const maxLine = 4096

// readHidden turns the terminal's echo off, then calls show (the prompt), then reads one line in the
// terminal's line mode (its own erase and kill keys work), and puts the terminal back as it was.
func readHidden(fd int, show func()) ([]byte, error) {
	old, err := unix.IoctlGetTermios(fd, ioctlGetTermios)
	if err != nil {
		return nil, err
	}
	hidden := *old
	hidden.Lflag &^= unix.ECHO
	hidden.Lflag |= unix.ICANON | unix.ISIG
	hidden.Iflag |= unix.ICRNL
	if err := unix.IoctlSetTermios(fd, ioctlSetTermios, &hidden); err != nil {
		return nil, err
	}
	defer func() { _ = unix.IoctlSetTermios(fd, ioctlSetTermios, old) }()
	show()
	var line []byte
	var b [1]byte
	for len(line) < maxLine {
		n, err := unix.Read(fd, b[:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			if len(line) == 0 {
				return nil, io.EOF
			}
			return line, nil
		}
		if b[0] == '\n' || b[0] == '\r' {
			return line, nil
		}
		line = append(line, b[0])
	}
	return line, nil
}
