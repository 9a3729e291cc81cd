//go:build unix

package sdk

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// openKeyFile opens the key file for reading without following a symbolic link (O_NOFOLLOW) and
// without blocking on a FIFO or a device (O_NONBLOCK; it has no effect on a regular file): readKey then
// checks the file it opened.
func openKeyFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err == nil {
		return f, nil
	}
	if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&os.ModeSymlink != 0 {
		return nil, fmt.Errorf("svc: profile: the key file %s is not a regular file (a symbolic link)", path)
	}
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("svc: profile: the key file %s is not a regular file (a symbolic link)", path)
	}
	return nil, fmt.Errorf("svc: profile: %w", err)
}
