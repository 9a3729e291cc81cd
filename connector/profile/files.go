package profile

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// maxFile bounds what the connector reads of one of its own files.
const maxFile = 1 << 20

// writeFileAtomic replaces path with data, mode 0600: written to a temporary file in the same directory,
// synced, then renamed over path, so a reader sees the old file or the new one, never half of one.
func writeFileAtomic(path string, data []byte) error {
	var b [8]byte
	_, _ = rand.Read(b[:])
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+"."+hex.EncodeToString(b[:]))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return syncDir(filepath.Dir(path))
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// writeJSON writes v, indented, with writeFileAtomic.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(path, append(b, '\n'))
}

// OpenNoFollow opens path (flag: os.O_RDONLY; with os.O_CREATE a new file is made 0600), refusing a symbolic link and anything but a regular file. What was opened is what is checked (fstat),
// never the path again: nothing can be swapped in between the check and the use.
func OpenNoFollow(path string, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, flag|openFlags, 0o600)
	if err != nil {
		if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, &ErrUnsafe{path, "is a symbolic link"}
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if !noFollow {
		// Without O_NOFOLLOW the path must still name, itself and not through a link, the file opened.
		lfi, err := os.Lstat(path)
		if err != nil || lfi.Mode()&fs.ModeSymlink != 0 || !os.SameFile(lfi, fi) {
			f.Close()
			return nil, &ErrUnsafe{path, "is a symbolic link, or changed while it was opened"}
		}
	}
	return f, nil
}

// readFile reads one of the profile's own small files: a regular file, never through a symbolic link.
// With private, the opened file must also be private to this user (checkPrivate): the key.
func readFile(path string, private bool) ([]byte, error) {
	f, err := OpenNoFollow(path, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if private {
		fi, err := f.Stat()
		if err != nil {
			return nil, err
		}
		if err := checkPrivate(path, fi); err != nil {
			return nil, err
		}
	}
	b, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxFile {
		return nil, fmt.Errorf("%s is larger than %d bytes", filepath.Base(path), maxFile)
	}
	return b, nil
}

// readJSON decodes one of the connector's own JSON files strictly: one JSON value, of the fields v
// has and no others, and nothing after it.
func readJSON(path string, v any) error {
	return decodeFile(path, v, true)
}

// readForeignJSON decodes a JSON file that another program writes (identity.json, the SDK's): one JSON
// value and nothing after it; fields v does not have are allowed, as that program may add some.
func readForeignJSON(path string, v any) error {
	return decodeFile(path, v, false)
}

func decodeFile(path string, v any, strict bool) error {
	b, err := readFile(path, false)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s: more than one JSON value", filepath.Base(path))
	}
	return nil
}
