//go:build unix

package profile

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// checkOwner refuses a file another user owns.
func checkOwner(path string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return &ErrUnsafe{path, "its owner cannot be read"}
	}
	if uid := os.Getuid(); int(st.Uid) != uid {
		return &ErrUnsafe{path, fmt.Sprintf("is owned by user %d, not by this user (%d)", st.Uid, uid)}
	}
	return nil
}
