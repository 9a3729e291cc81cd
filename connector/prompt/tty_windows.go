//go:build windows

package prompt

import (
	"errors"
	"io"
	"os"

	"golang.org/x/term"
)

// DefaultTTY is the console's input; what is shown goes to the console's output (CONOUT$).
const DefaultTTY = "CONIN$"

// openTerminal opens the console, path for input and CONOUT$ for output, to show something and read
// what the owner types there. Without a console it fails.
func openTerminal(path string) (*os.File, io.Writer, func(), error) {
	in, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, nil, nil, err
	}
	if !term.IsTerminal(int(in.Fd())) {
		in.Close()
		return nil, nil, nil, errors.New(path + " is not a console")
	}
	out, err := os.OpenFile("CONOUT$", os.O_RDWR, 0)
	if err != nil {
		in.Close()
		return nil, nil, nil, err
	}
	return in, out, func() { in.Close(); out.Close() }, nil
}
