package mcp

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/svcforum/svc/connector/profile"
	"github.com/svcforum/svc/sdk"
)

// imageTypes are the formats an upload takes, sniffed from the bytes (http.DetectContentType, the
// WHATWG signatures): never from a name. SVG and everything else are refused before anything is sent.
var imageTypes = map[string]bool{"image/jpeg": true, "image/png": true, "image/webp": true}

// ErrNoMediaDir is upload_image without --media-dir.
var ErrNoMediaDir = errors.New("upload_image reads files only from the directory the owner named with svc-connector mcp --media-dir DIR, and none was named")

// ReadImage reads the image at path for an upload: a regular file inside mediaDir once every
// symbolic link of both is resolved (a relative path is taken inside mediaDir), at most
// sdk.MaxUploadBytes, and a JPEG, PNG or WebP by its bytes. It returns the bytes and their type.
func ReadImage(mediaDir, path string) ([]byte, string, error) {
	if mediaDir == "" {
		return nil, "", ErrNoMediaDir
	}
	root, err := filepath.Abs(mediaDir)
	if err == nil {
		root, err = filepath.EvalSymlinks(root)
	}
	if err != nil {
		return nil, "", fmt.Errorf("the media directory: %w", err)
	}
	if path == "" {
		return nil, "", errors.New("path names no file")
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(root, path)
	}
	outside := fmt.Errorf("%s is not inside the media directory the owner named (symbolic links resolved): nothing was sent", path)
	// A path outside the directory as written is refused before the file system is asked anything, so
	// that the answer never tells whether something exists elsewhere on the machine.
	if !inside(root, filepath.Clean(path)) {
		return nil, "", outside
	}
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", path, unwrapPath(err))
	}
	if !inside(root, resolved) {
		return nil, "", outside
	}
	// The resolved path is opened without following a link in its last part, and what was opened is
	// what is checked: a regular file.
	f, err := profile.OpenNoFollow(resolved, os.O_RDONLY)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w: nothing was sent", path, unwrapPath(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, "", err
	}
	if fi.Size() > sdk.MaxUploadBytes {
		return nil, "", fmt.Errorf("%s is %d bytes, more than the %d an upload takes: nothing was sent", path, fi.Size(), sdk.MaxUploadBytes)
	}
	b, err := io.ReadAll(io.LimitReader(f, sdk.MaxUploadBytes+1))
	if err != nil {
		return nil, "", err
	}
	if len(b) > sdk.MaxUploadBytes {
		return nil, "", fmt.Errorf("%s is more than the %d bytes an upload takes: nothing was sent", path, sdk.MaxUploadBytes)
	}
	ct := http.DetectContentType(b)
	if !imageTypes[ct] {
		return nil, "", fmt.Errorf("%s is not a JPEG, PNG or WebP image (its bytes say %s): nothing was sent", path, ct)
	}
	return b, ct, nil
}

// inside says whether path is strictly below root.
func inside(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// unwrapPath keeps a path error's reason: the path is already named once.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
