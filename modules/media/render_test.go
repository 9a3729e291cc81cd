package media_test

import (
	"bytes"
	"errors"
	"image"
	"image/jpeg"
	"image/png"
	"testing"

	"github.com/svcforum/svc/modules/media"
	"github.com/svcforum/svc/testkit"
)

// TestRenderTurnsUprightAndStripsMetadata is scenario 32: a phone's JPEG with GPS and orientation 6
// comes out turned, with no metadata block left in either variant.
func TestRenderTurnsUprightAndStripsMetadata(t *testing.T) {
	t.Parallel()
	original := testkit.ExifJPEG(t, 2000, 1000, 6)
	if !bytes.Contains(original, []byte("Exif\x00\x00")) {
		t.Fatal("the test file carries no Exif block")
	}
	r, err := media.Render(original)
	if err != nil {
		t.Fatal(err)
	}
	if r.Format != media.FormatJPEG || r.Width != 1000 || r.Height != 2000 {
		t.Fatalf("rendered %s %dx%d, want jpeg 1000x2000 (turned)", r.Format, r.Width, r.Height)
	}
	for name, v := range map[string]struct {
		v    media.Variant
		w, h int
	}{"display": {r.Display, 800, 1600}, "thumb": {r.Thumb, 200, 400}} {
		if v.v.Width != v.w || v.v.Height != v.h {
			t.Errorf("%s is %dx%d, want %dx%d", name, v.v.Width, v.v.Height, v.w, v.h)
		}
		assertNoMetadata(t, name, v.v.Data)
		img, err := jpeg.Decode(bytes.NewReader(v.v.Data))
		if err != nil {
			t.Fatalf("%s does not decode: %v", name, err)
		}
		if b := img.Bounds(); b.Dx() != v.w || b.Dy() != v.h {
			t.Errorf("%s decodes as %v", name, b)
		}
		// Stored top half red; turned 90 degrees clockwise, red is on the right and blue on the left.
		right, left := img.At(v.w*3/4, v.h/2), img.At(v.w/4, v.h/2)
		if rr, _, rb, _ := right.RGBA(); rr < rb {
			t.Errorf("%s: the right half is not red (%v): the orientation was not applied", name, right)
		}
		if lr, _, lb, _ := left.RGBA(); lb < lr {
			t.Errorf("%s: the left half is not blue (%v)", name, left)
		}
	}
}

// assertNoMetadata fails when a JPEG holds any segment but the ones an encoder needs for pixels.
func assertNoMetadata(t *testing.T, name string, j []byte) {
	t.Helper()
	for _, s := range [][]byte{[]byte("Exif"), []byte("http://ns.adobe.com/xap"), []byte("ICC_PROFILE")} {
		if bytes.Contains(j, s) {
			t.Errorf("%s still holds %q", name, s)
		}
	}
	for i := 2; i+4 <= len(j); {
		if j[i] != 0xFF {
			t.Fatalf("%s: no marker at %d", name, i)
		}
		m := j[i+1]
		if m == 0xDA {
			return // the scan: pixels to the end
		}
		if (m >= 0xE0 && m <= 0xEF) || m == 0xFE {
			t.Errorf("%s keeps an APPn or comment segment %#x", name, m)
		}
		i += 2 + (int(j[i+2])<<8 | int(j[i+3]))
	}
}

// TestRenderDropsAPolyglotsTrailer is scenario 32's second half: what followed the image is gone.
func TestRenderDropsAPolyglotsTrailer(t *testing.T) {
	t.Parallel()
	r, err := media.Render(testkit.Polyglot(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range [][]byte{r.Display.Data, r.Thumb.Data} {
		if bytes.Contains(v, []byte("<script")) || !bytes.HasSuffix(v, []byte{0xFF, 0xD9}) {
			t.Fatal("the re-encoded image keeps the trailer or does not end at EOI")
		}
	}
}

// TestRenderKeepsTransparencyAsPNG: an image with transparent pixels is kept as PNG, never flattened.
func TestRenderKeepsTransparencyAsPNG(t *testing.T) {
	t.Parallel()
	r, err := media.Render(testkit.PNG(t, 500, 300, true))
	if err != nil {
		t.Fatal(err)
	}
	if r.Format != media.FormatPNG || r.Display.Width != 500 || r.Thumb.Width != 400 || r.Thumb.Height != 240 {
		t.Fatalf("rendered %s, display %dx%d, thumb %dx%d", r.Format, r.Display.Width, r.Display.Height, r.Thumb.Width, r.Thumb.Height)
	}
	img, err := png.Decode(bytes.NewReader(r.Display.Data))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, a := img.At(0, 0).RGBA(); a != 0 {
		t.Fatalf("the transparent column is opaque (alpha %d)", a)
	}
	if _, ok := img.(interface{ Opaque() bool }); !ok {
		t.Fatal("decoded PNG has no Opaque method")
	}
}

// TestRenderNeverEnlarges: a small image keeps its size in both variants.
func TestRenderNeverEnlarges(t *testing.T) {
	t.Parallel()
	r, err := media.Render(testkit.WebP())
	if err != nil {
		t.Fatal(err)
	}
	if r.Display.Width != 1 || r.Thumb.Height != 1 {
		t.Fatalf("a 1x1 WebP became %dx%d / %dx%d", r.Display.Width, r.Display.Height, r.Thumb.Width, r.Thumb.Height)
	}
	if _, _, err := image.Decode(bytes.NewReader(r.Display.Data)); err != nil {
		t.Fatal(err)
	}
}

// TestRenderRefusesATruncatedImage is scenario 33's first half: the header passes, the pixels do not,
// and Render says so as an UndecodableError (the job then fails the upload undecodable).
func TestRenderRefusesATruncatedImage(t *testing.T) {
	t.Parallel()
	data := testkit.Truncated(t)
	if _, p := media.Sniff(data); p != nil {
		t.Fatalf("the truncated file's header is refused: %s", p.Detail)
	}
	_, err := media.Render(data)
	var u *media.UndecodableError
	if !errors.As(err, &u) {
		t.Fatalf("Render = %v, want an UndecodableError", err)
	}
}
