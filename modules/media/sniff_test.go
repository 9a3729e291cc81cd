package media_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/modules/media"
	"github.com/svcforum/svc/testkit"
)

// TestSniff is research/reliability.md scenarios 27-30 at the byte level: the format comes from the
// bytes alone, animation and oversized headers are refused before anything decodes, and the pixel
// product is computed without overflow.
func TestSniff(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		data   []byte
		format string       // accepted as this format
		code   problem.Code // refused with this code
	}{
		{name: "jpeg", data: testkit.JPEG(t, 40, 20), format: media.FormatJPEG},
		{name: "jpeg with exif", data: testkit.ExifJPEG(t, 40, 20, 6), format: media.FormatJPEG},
		{name: "png", data: testkit.PNG(t, 40, 20, false), format: media.FormatPNG},
		{name: "png with alpha", data: testkit.PNG(t, 40, 20, true), format: media.FormatPNG},
		{name: "webp", data: testkit.WebP(), format: media.FormatWebP},
		{name: "polyglot jpeg+html", data: testkit.Polyglot(t), format: media.FormatJPEG},
		{name: "exactly the largest side", data: testkit.HugePNG(media.MaxSide, 100), format: media.FormatPNG},
		{name: "svg with prolog", data: testkit.SVG(true), code: problem.UnsupportedImage},
		{name: "svg without prolog", data: testkit.SVG(false), code: problem.UnsupportedImage},
		{name: "html", data: []byte("<!DOCTYPE html><html><script>alert(1)</script></html>"), code: problem.UnsupportedImage},
		{name: "gif", data: testkit.GIF(), code: problem.UnsupportedImage},
		{name: "bmp", data: append([]byte("BM"), make([]byte, 60)...), code: problem.UnsupportedImage},
		{name: "tiff", data: append([]byte("II*\x00"), make([]byte, 60)...), code: problem.UnsupportedImage},
		{name: "apng", data: testkit.APNG(t), code: problem.UnsupportedImage},
		{name: "animated webp by flag", data: testkit.AnimatedWebP(false), code: problem.UnsupportedImage},
		{name: "animated webp by chunks, flag cleared", data: testkit.AnimatedWebP(true), code: problem.UnsupportedImage},
		{name: "png header 100000x100000", data: testkit.HugePNG(100000, 100000), code: problem.ImageTooLarge},
		{name: "png header 2^31-1 square", data: testkit.HugePNG(1<<31-1, 1<<31-1), code: problem.ImageTooLarge},
		{name: "jpeg header 65535x65535", data: testkit.HugeJPEG(t, 65535, 65535), code: problem.ImageTooLarge},
		{name: "webp header 100000x100000", data: testkit.HugeWebP(100000, 100000), code: problem.ImageTooLarge},
		{name: "one side too long", data: testkit.HugePNG(media.MaxSide+1, 1), code: problem.ImageTooLarge},
		{name: "too many pixels", data: testkit.HugePNG(8000, 5001), code: problem.ImageTooLarge},
		{name: "empty", data: nil, code: problem.UnsupportedImage},
		{name: "text", data: []byte("hello"), code: problem.UnsupportedImage},
		{name: "png magic alone", data: []byte("\x89PNG\r\n\x1a\n"), code: problem.UnsupportedImage},
		{name: "jpeg magic alone", data: []byte{0xFF, 0xD8, 0xFF}, code: problem.UnsupportedImage},
		{name: "riff of another kind", data: []byte("RIFF\x04\x00\x00\x00WAVE"), code: problem.UnsupportedImage},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, p := media.Sniff(tc.data)
			if tc.code == "" {
				if p != nil {
					t.Fatalf("refused: %s: %s", p.Code, p.Detail)
				}
				if h.Format != tc.format || h.Width < 1 || h.Height < 1 {
					t.Fatalf("header %+v, want format %s with pixels", h, tc.format)
				}
				return
			}
			if p == nil {
				t.Fatalf("accepted %+v, want %s", h, tc.code)
			}
			if p.Code != tc.code || p.Status != 422 {
				t.Fatalf("refused with %d %s (%s), want 422 %s", p.Status, p.Code, p.Detail, tc.code)
			}
		})
	}
}

// TestSniffNamesWhatItRefused: the refusal says what the file is, so an agent can fix its request.
func TestSniffNamesWhatItRefused(t *testing.T) {
	t.Parallel()
	for data, want := range map[string]string{
		string(testkit.SVG(false)):         "SVG",
		string(testkit.GIF()):              "GIF",
		string(testkit.APNG(t)):            "animated PNG",
		string(testkit.AnimatedWebP(true)): "animated WebP",
	} {
		_, p := media.Sniff([]byte(data))
		if p == nil || !strings.Contains(p.Detail, want) {
			t.Errorf("detail %v does not name %q", p, want)
		}
	}
}

// FuzzSniff: no input makes Sniff panic, and whatever it accepts is within bounds.
func FuzzSniff(f *testing.F) {
	for _, seed := range [][]byte{testkit.WebP(), testkit.AnimatedWebP(true), testkit.HugePNG(9, 9), testkit.GIF(),
		bytes.Repeat([]byte{0xFF, 0xD8, 0xFF}, 3)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, p := media.Sniff(b)
		if p == nil && (h.Width > media.MaxSide || h.Height > media.MaxSide || int64(h.Width)*int64(h.Height) > media.MaxPixels) {
			t.Fatalf("accepted %+v", h)
		}
	})
}
