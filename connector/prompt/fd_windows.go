//go:build windows

package prompt

import "golang.org/x/sys/windows"

// fdKind tells what the handle fd is, with GetFileType: nothing is read from it. A disk file is
// refused as a file (a directory cannot be read as a handle at all); a console is a terminal.
func fdKind(fd int) (int, error) {
	t, err := windows.GetFileType(windows.Handle(fd))
	if err != nil {
		return kindOther, err
	}
	switch t {
	case windows.FILE_TYPE_PIPE: // anonymous and named pipes, and sockets
		return kindPipe, nil
	case windows.FILE_TYPE_DISK:
		return kindFile, nil
	case windows.FILE_TYPE_CHAR:
		var mode uint32
		if windows.GetConsoleMode(windows.Handle(fd), &mode) == nil {
			return kindTerminal, nil
		}
	}
	return kindOther, nil
}
