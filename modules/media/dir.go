package media

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Dir keeps objects as files under a directory: the default of one replica, and of `make run`.
type Dir struct {
	root string
}

// NewDir returns the storage under root; the directory is made on the first write.
func NewDir(root string) *Dir { return &Dir{root: root} }

func (d *Dir) path(key string) (string, error) {
	if !fs.ValidPath(key) || strings.Contains(key, "\\") {
		return "", fmt.Errorf("storage key %q is not a clean relative path", key)
	}
	return filepath.Join(d.root, filepath.FromSlash(key)), nil
}

// Put writes the object to a temporary file and renames it into place, so that a reader sees all of
// it or nothing.
func (d *Dir) Put(_ context.Context, key string, data []byte, _ string) error {
	p, err := d.path(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
		return fmt.Errorf("store %s: %w", key, err)
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".put-*")
	if err != nil {
		return fmt.Errorf("store %s: %w", key, err)
	}
	defer os.Remove(f.Name()) // gone after the rename; removes a failed write's leftover
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("store %s: %w", key, err)
	}
	// On disk before the rename makes it visible: a crash never leaves a named, empty object.
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("store %s: %w", key, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("store %s: %w", key, err)
	}
	if err := os.Rename(f.Name(), p); err != nil {
		return fmt.Errorf("store %s: %w", key, err)
	}
	return nil
}

// Get opens the object.
func (d *Dir) Get(_ context.Context, key string) (io.ReadCloser, int64, error) {
	p, err := d.path(key)
	if err != nil {
		return nil, 0, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, ErrNoObject
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read %s: %w", key, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("read %s: %w", key, err)
	}
	return f, st.Size(), nil
}

// Delete removes the object.
func (d *Dir) Delete(_ context.Context, key string) error {
	p, err := d.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	return nil
}

// Check makes sure the directory exists and can be written.
func (d *Dir) Check(_ context.Context) error {
	if err := os.MkdirAll(d.root, 0o750); err != nil {
		return fmt.Errorf("media directory: %w", err)
	}
	f, err := os.CreateTemp(d.root, ".check-*")
	if err != nil {
		return fmt.Errorf("media directory is not writable: %w", err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

var _ Storage = (*Dir)(nil)
