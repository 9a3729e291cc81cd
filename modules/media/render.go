package media

import (
	"bytes"
	"fmt"
	"image"

	"github.com/disintegration/imaging"

	_ "golang.org/x/image/webp" // registers WebP with image.Decode, which imaging.Decode uses
)

// The longest side of each variant, in pixels (WIRE.md section 9), and the JPEG quality.
const (
	DisplaySide = 1600
	ThumbSide   = 400
	JPEGQuality = 85
)

// Rendered is what processing makes of an original: the upright image's size and its two variants.
type Rendered struct {
	Width, Height int    // the upright original
	Format        string // the variants' format: jpeg, or png for an image with transparency
	Display       Variant
	Thumb         Variant
}

// Variant is one encoded size.
type Variant struct {
	Data          []byte
	Width, Height int
}

// UndecodableError is an original whose image data does not decode (truncated or corrupt).
type UndecodableError struct{ Err error }

func (e *UndecodableError) Error() string { return "undecodable image: " + e.Err.Error() }
func (e *UndecodableError) Unwrap() error { return e.Err }

// Render decodes an original, turns it upright by its EXIF orientation and re-encodes it as the
// display size and the thumbnail. Re-encoding keeps nothing but pixels: every metadata block (EXIF
// with its GPS position, XMP, ICC, comments) and anything appended to the file (a polyglot's HTML or
// archive) is gone. The caller has sniffed the original (Sniff), so its header is within bounds.
func Render(original []byte) (Rendered, error) {
	img, err := imaging.Decode(bytes.NewReader(original), imaging.AutoOrientation(true))
	if err != nil {
		return Rendered{}, &UndecodableError{Err: err}
	}
	format := FormatJPEG
	if !opaque(img) {
		format = FormatPNG
	}
	// The thumbnail is made from the display size rather than the original: the same picture at a
	// fraction of the work (the original may be 40 megapixels, the display size is at most 2.56).
	small := fit(img, DisplaySide)
	display, err := encode(small, format)
	if err != nil {
		return Rendered{}, err
	}
	thumb, err := encode(fit(small, ThumbSide), format)
	if err != nil {
		return Rendered{}, err
	}
	b := img.Bounds()
	return Rendered{Width: b.Dx(), Height: b.Dy(), Format: format, Display: display, Thumb: thumb}, nil
}

// fit scales img down (never up) so that its longest side is at most side.
func fit(img image.Image, side int) image.Image {
	b := img.Bounds()
	if b.Dx() <= side && b.Dy() <= side {
		return img
	}
	return imaging.Fit(img, side, side, imaging.Lanczos)
}

// encode writes img in format: JPEG, or PNG for an image with transparency.
func encode(img image.Image, format string) (Variant, error) {
	var buf bytes.Buffer
	f := imaging.JPEG
	if format == FormatPNG {
		f = imaging.PNG
	}
	if err := imaging.Encode(&buf, img, f, imaging.JPEGQuality(JPEGQuality)); err != nil {
		return Variant{}, fmt.Errorf("encode %s: %w", format, err)
	}
	b := img.Bounds()
	return Variant{Data: buf.Bytes(), Width: b.Dx(), Height: b.Dy()}, nil
}

// opaque reports whether img has no transparent pixel.
func opaque(img image.Image) bool {
	if o, ok := img.(interface{ Opaque() bool }); ok {
		return o.Opaque()
	}
	return true
}
