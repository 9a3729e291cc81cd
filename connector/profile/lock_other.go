//go:build !unix && !windows

package profile

import (
	"errors"
	"os"
)

var errNoLocks = errors.New("profile locks need flock(2) (Unix) or LockFileEx (Windows), which this system lacks")

func tryLock(*os.File, bool) (bool, error) { return false, errNoLocks }

func unlock(*os.File) error { return errNoLocks }
