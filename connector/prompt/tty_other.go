//go:build !windows

package prompt

import (
	"errors"
	"io"
	"os"

	"golang.org/x/term"
)

// DefaultTTY is the controlling terminal.
const DefaultTTY = "/dev/tty"

// openTerminal opens the controlling terminal, path, to show something and read what the owner types
// there. Without one (no controlling terminal, or path is not a terminal) it fails.
func openTerminal(path string) (*os.File, io.Writer, func(), error) {
	tty, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, nil, nil, err
	}
	if !term.IsTerminal(int(tty.Fd())) {
		tty.Close()
		return nil, nil, nil, errors.New(path + " is not a terminal")
	}
	return tty, tty, func() { tty.Close() }, nil
}
