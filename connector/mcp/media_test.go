package mcp

import (
	"bytes"
	"errors"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svcforum/svc/sdk"
)

func pngBytes(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewRGBA(image.Rect(0, 0, 4, 3))); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func write(t *testing.T, path string, b []byte) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Only JPEG, PNG and WebP files inside the media directory, symbolic links resolved, are read.
func TestReadImageStaysInTheMediaDirectory(t *testing.T) {
	root := t.TempDir()
	media := filepath.Join(root, "media")
	outside := filepath.Join(root, "outside")
	img := pngBytes(t)
	write(t, filepath.Join(media, "sub", "ok.png"), img)
	write(t, filepath.Join(outside, "secret.png"), img)
	write(t, filepath.Join(media, "logo.svg"), []byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`))
	write(t, filepath.Join(media, "fake.png"), []byte("not an image at all, whatever its name says"))
	write(t, filepath.Join(media, "big.png"), append(img, make([]byte, sdk.MaxUploadBytes)...))
	if err := os.Symlink(filepath.Join(outside, "secret.png"), filepath.Join(media, "link-out.png")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside), filepath.Join(media, "dir-out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(media, "sub", "ok.png"), filepath.Join(media, "link-in.png")); err != nil {
		t.Fatal(err)
	}
	// The media directory itself through a link is fine: both sides are resolved.
	if err := os.Symlink(media, filepath.Join(root, "media-link")); err != nil {
		t.Fatal(err)
	}
	jpeg := append([]byte{0xff, 0xd8, 0xff, 0xe0}, make([]byte, 64)...)
	write(t, filepath.Join(media, "photo.jpg"), jpeg)
	webp := append([]byte("RIFF\x24\x00\x00\x00WEBPVP8 "), make([]byte, 64)...)
	write(t, filepath.Join(media, "pic.webp"), webp)
	if err := os.Mkdir(filepath.Join(media, "a-dir"), 0o700); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct{ dir, path, ct string }{
		{media, "sub/ok.png", "image/png"},
		{media, filepath.Join(media, "sub", "ok.png"), "image/png"},
		{media, "link-in.png", "image/png"},
		{filepath.Join(root, "media-link"), "sub/ok.png", "image/png"},
		{media, "photo.jpg", "image/jpeg"},
		{media, "pic.webp", "image/webp"},
	} {
		b, ct, err := ReadImage(c.dir, c.path)
		if err != nil || ct != c.ct || len(b) == 0 {
			t.Errorf("%s in %s: %q %v", c.path, c.dir, ct, err)
		}
	}
	for _, c := range []struct{ dir, path, why string }{
		{"", "sub/ok.png", "--media-dir"},
		{media, filepath.Join(outside, "secret.png"), "not inside the media directory"},
		{media, "../outside/secret.png", "not inside the media directory"},
		{media, "sub/../../outside/secret.png", "not inside the media directory"},
		{media, "link-out.png", "not inside the media directory"},
		{media, "dir-out/secret.png", "not inside the media directory"},
		{media, ".", "not inside the media directory"},
		{media, "logo.svg", "not a JPEG, PNG or WebP"},
		{media, "fake.png", "not a JPEG, PNG or WebP"},
		{media, "big.png", "more than the"},
		{media, "a-dir", "not a regular file"},
		{media, "missing.png", "no such file"},
	} {
		if _, _, err := ReadImage(c.dir, c.path); err == nil || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s in %q: %v, want an error saying %q", c.path, c.dir, err, c.why)
		}
	}
	if _, _, err := ReadImage("", "x"); !errors.Is(err, ErrNoMediaDir) {
		t.Fatalf("no media dir: %v", err)
	}
}

// A path outside the media directory gets the same refusal whether or not something is there: the
// model cannot use upload_image to learn what exists elsewhere.
func TestReadImageOutsideSaysNothingOfWhatExists(t *testing.T) {
	root := t.TempDir()
	media := filepath.Join(root, "media")
	if err := os.MkdirAll(media, 0o700); err != nil {
		t.Fatal(err)
	}
	there := write(t, filepath.Join(root, "there.png"), pngBytes(t))
	absent := filepath.Join(root, "absent.png")
	_, _, errThere := ReadImage(media, there)
	_, _, errAbsent := ReadImage(media, absent)
	if errThere == nil || errAbsent == nil {
		t.Fatalf("outside the directory: %v, %v", errThere, errAbsent)
	}
	same := func(err error, path string) string { return strings.ReplaceAll(err.Error(), path, "PATH") }
	if same(errThere, there) != same(errAbsent, absent) {
		t.Fatalf("the refusals differ:\n%v\n%v", errThere, errAbsent)
	}
}
