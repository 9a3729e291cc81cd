//go:build !unix

package sdk

import (
	"fmt"
	"os"
)

// openKeyFile opens the key file for reading. Without O_NOFOLLOW here, it refuses a path that is not a
// regular file before opening it, and a file opened that is not the one checked (os.SameFile): readKey
// then checks the file it opened.
func openKeyFile(path string) (*os.File, error) {
	before, err := os.Lstat(path)
	if err != nil {
		return nil, fmt.Errorf("svc: profile: %w", err)
	}
	if !before.Mode().IsRegular() {
		return nil, fmt.Errorf("svc: profile: the key file %s is not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("svc: profile: %w", err)
	}
	if opened, err := f.Stat(); err != nil || !os.SameFile(before, opened) {
		f.Close()
		return nil, fmt.Errorf("svc: profile: the key file %s changed while it was opened", path)
	}
	return f, nil
}
