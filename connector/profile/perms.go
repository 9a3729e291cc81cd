package profile

import (
	"fmt"
	"io/fs"
	"os"
	goruntime "runtime"
)

// posixModes says whether a file's permission bits mean anything here. On Windows they do not: Go
// reports 0666 (or 0444) for every file and 0777 for every directory, whatever its ACL says. There the
// profile lives in the user's own %AppData% (os.UserConfigDir), which its ACL keeps to that user, so
// only the checks that hold everywhere apply: no symbolic link, a regular file where one is expected.
var posixModes = goruntime.GOOS != "windows"

// ErrUnsafe is a profile whose files others could read or change.
type ErrUnsafe struct {
	Path   string
	Reason string
}

func (e *ErrUnsafe) Error() string { return fmt.Sprintf("%s: %s", e.Path, e.Reason) }

// checkPrivate checks a file or directory of a profile: not a symbolic link, owned by this user, and
// neither readable nor writable by anyone else (no group or other permission bits at all; on Windows,
// see posixModes, the permission bits are not checked).
func checkPrivate(path string, fi fs.FileInfo) error {
	if fi.Mode()&fs.ModeSymlink != 0 {
		return &ErrUnsafe{path, "is a symbolic link"}
	}
	if err := checkOwner(path, fi); err != nil {
		return err
	}
	if perm := fi.Mode().Perm(); posixModes && perm&0o077 != 0 {
		return &ErrUnsafe{path, fmt.Sprintf("has mode %04o: others may read or change it (want 0600 for a file, 0700 for a directory)", perm)}
	}
	return nil
}

// checkParent checks a directory above a profile (the configuration directory and its profiles/
// folder): owned by this user and not writable by anyone else (on Windows: see posixModes), so nobody
// else can swap a profile. A symbolic link to such a directory is fine (a configuration directory
// often is one).
func checkParent(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return &ErrUnsafe{path, "is not a directory"}
	}
	if err := checkOwner(path, fi); err != nil {
		return err
	}
	if perm := fi.Mode().Perm(); posixModes && perm&0o022 != 0 {
		return &ErrUnsafe{path, fmt.Sprintf("has mode %04o: others may change it", perm)}
	}
	return nil
}
