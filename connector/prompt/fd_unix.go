//go:build unix

package prompt

import (
	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// fdKind tells what fd is, with fstat(2): nothing is read from it.
func fdKind(fd int) (int, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return kindOther, err
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return kindPipe, nil
	case unix.S_IFSOCK:
		return kindSocket, nil
	case unix.S_IFREG:
		return kindFile, nil
	case unix.S_IFDIR:
		return kindDirectory, nil
	case unix.S_IFCHR:
		if term.IsTerminal(fd) {
			return kindTerminal, nil
		}
	}
	return kindOther, nil
}
