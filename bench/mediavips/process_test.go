package mediavips

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"testing"

	"github.com/davidbyttow/govips/v2/vips"

	"github.com/svcforum/svc/modules/media"
)

// The original every iteration processes: a 12-megapixel camera-like JPEG stored landscape, with an
// EXIF orientation of 6 (turn 90° clockwise to display), so that both implementations decode, rotate,
// strip metadata and make two variants of a portrait image.
const (
	srcWidth, srcHeight = 4000, 3000
	srcOrientation      = 6
	srcQuality          = 90
	// markSide is the red square in the stored top-left corner, which orientation 6 displays top-right.
	markSide = 400
	// exifDescription rides in the EXIF block, so that finding it in an output means the EXIF survived.
	exifDescription = "svc bench: this EXIF block must not survive processing"
)

// original is made once in TestMain; exif is the APP1 segment (EXIF) written into it.
var original, exif []byte

func TestMain(m *testing.M) {
	vips.LoggingSettings(nil, vips.LogLevelError)
	// libvips may use as many threads as Go may (imaging resizes in GOMAXPROCS goroutines), and its
	// operation cache is off so that every iteration decodes and resizes for real.
	vips.Startup(&vips.Config{ConcurrencyLevel: runtime.GOMAXPROCS(0), MaxCacheFiles: 0, MaxCacheMem: 0, MaxCacheSize: 0})
	var err error
	exif = exifOrientation(srcOrientation, exifDescription)
	original, err = camera(srcWidth, srcHeight, exif)
	if err != nil {
		fmt.Fprintln(os.Stderr, "make the original:", err)
		os.Exit(1)
	}
	code := m.Run()
	vips.Shutdown()
	os.Exit(code)
}

// impl is one way of doing the whole job for one original: display and thumbnail, both JPEG q85.
type impl struct {
	name   string
	render func(original []byte) (display, thumb media.Variant, err error)
}

// impls lists the baseline first: benchstat -col /impl compares every column with the first it sees.
var impls = []impl{
	{"libvips", renderVips},
	{"svc", renderSvc},
}

func renderSvc(original []byte) (display, thumb media.Variant, err error) {
	r, err := media.Render(original)
	if err != nil {
		return media.Variant{}, media.Variant{}, err
	}
	if r.Format != media.FormatJPEG {
		return media.Variant{}, media.Variant{}, fmt.Errorf("svc rendered %s, want %s", r.Format, media.FormatJPEG)
	}
	return r.Display, r.Thumb, nil
}

// renderVips does what media.Render does with libvips: decode the whole original once (no
// shrink-on-load, so that it starts from the same 12 megapixels), fit it into each side (never
// enlarging), turn each variant upright by the EXIF orientation, and encode it as a baseline JPEG at
// the same quality with 4:2:0 chroma, as Go's image/jpeg writes, keeping no metadata.
//
// It rotates after fitting, as libvips is meant to be used: a 90° turn ahead of the resize makes
// libvips read its source in columns and costs several times the whole job (see README.md).
// media.Render turns the full-size image first; both end with the same pixels.
func renderVips(original []byte) (display, thumb media.Variant, err error) {
	img, err := vips.NewImageFromBuffer(original)
	if err != nil {
		return media.Variant{}, media.Variant{}, fmt.Errorf("vips load: %w", err)
	}
	defer img.Close()
	if display, err = vipsVariant(img, media.DisplaySide); err != nil {
		return media.Variant{}, media.Variant{}, err
	}
	if thumb, err = vipsVariant(img, media.ThumbSide); err != nil {
		return media.Variant{}, media.Variant{}, err
	}
	return display, thumb, nil
}

// vipsVariant fits a copy of the decoded original into side x side and turns it upright. The copy
// shares the decoded pixels, so the original is decoded once for both variants, as in media.Render.
// Thumbnail on an image that is already decoded cannot shrink while decoding: it resizes the
// full-size pixels (box shrink to within twice the target, then Lanczos 3). It also applies the
// orientation itself and drops the tag, which leaves AutoRotate nothing to do with libvips 8.14; it
// stays so that a libvips that does not will still be turned the right way.
func vipsVariant(decoded *vips.ImageRef, side int) (media.Variant, error) {
	v, err := decoded.Copy()
	if err != nil {
		return media.Variant{}, fmt.Errorf("vips copy: %w", err)
	}
	defer v.Close()
	if err := v.ThumbnailWithSize(side, side, vips.InterestingNone, vips.SizeDown); err != nil {
		return media.Variant{}, fmt.Errorf("vips fit %d: %w", side, err)
	}
	if err := v.AutoRotate(); err != nil {
		return media.Variant{}, fmt.Errorf("vips autorotate %d: %w", side, err)
	}
	data, _, err := v.ExportJpeg(&vips.JpegExportParams{
		StripMetadata: true,
		Quality:       media.JPEGQuality,
		SubsampleMode: vips.VipsForeignSubsampleOn,
	})
	if err != nil {
		return media.Variant{}, fmt.Errorf("vips encode %d: %w", side, err)
	}
	return media.Variant{Data: data, Width: v.Width(), Height: v.Height()}, nil
}

func BenchmarkProcess(b *testing.B) {
	for _, im := range impls {
		b.Run("impl="+im.name, func(b *testing.B) {
			for range b.N {
				if _, _, err := im.render(original); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "images/s")
		})
	}
}

// TestSameWork checks that both implementations do the job the benchmark times: the variants have the
// upright sizes, are JPEGs, carry none of the original's EXIF, are turned the same way, and show the
// same picture.
func TestSameWork(t *testing.T) {
	if !bytes.Contains(original, exif) {
		t.Fatal("the original does not carry its EXIF block")
	}
	displays := make([]image.Image, len(impls))
	for i, im := range impls {
		display, thumb, err := im.render(original)
		if err != nil {
			t.Fatalf("%s: %v", im.name, err)
		}
		for _, c := range []struct {
			name string
			v    media.Variant
			w, h int
		}{
			{"display", display, srcHeight * media.DisplaySide / srcWidth, media.DisplaySide},
			{"thumb", thumb, srcHeight * media.ThumbSide / srcWidth, media.ThumbSide},
		} {
			if c.v.Width != c.w || c.v.Height != c.h {
				t.Errorf("%s %s: says %dx%d, want %dx%d", im.name, c.name, c.v.Width, c.v.Height, c.w, c.h)
			}
			cfg, format, err := image.DecodeConfig(bytes.NewReader(c.v.Data))
			if err != nil {
				t.Errorf("%s %s: %v", im.name, c.name, err)
				continue
			}
			if format != "jpeg" || cfg.Width != c.w || cfg.Height != c.h {
				t.Errorf("%s %s: encoded %s %dx%d, want jpeg %dx%d", im.name, c.name, format, cfg.Width, cfg.Height, c.w, c.h)
			}
			for _, leak := range [][]byte{[]byte("Exif\x00\x00"), []byte(exifDescription), exif} {
				if bytes.Contains(c.v.Data, leak) {
					t.Errorf("%s %s: still carries EXIF bytes %q", im.name, c.name, leak[:min(len(leak), 16)])
				}
			}
			t.Logf("%s %s: %dx%d, %d bytes", im.name, c.name, c.v.Width, c.v.Height, len(c.v.Data))
		}
		img, err := jpeg.Decode(bytes.NewReader(display.Data))
		if err != nil {
			t.Fatalf("%s display: %v", im.name, err)
		}
		// Orientation 6 shows the stored top-left corner, where the red square is, at the top right.
		w, m := img.Bounds().Dx(), markSide*media.DisplaySide/srcWidth/2
		if !red(img.At(w-m, m)) || red(img.At(m, m)) {
			t.Errorf("%s display: the red corner is not at the top right (top right %v, top left %v)",
				im.name, img.At(w-m, m), img.At(m, m))
		}
		displays[i] = img
	}
	if t.Failed() {
		return
	}
	diff := meanAbsDiff(displays[0], displays[1])
	t.Logf("mean absolute difference of the displays: %.2f of 255", diff)
	if diff > 4 {
		t.Errorf("%s and %s displays differ by %.2f of 255 on average, want at most 4", impls[0].name, impls[1].name, diff)
	}
}

func red(c color.Color) bool {
	r, g, b, _ := c.RGBA()
	return r>>8 > 200 && g>>8 < 60 && b>>8 < 60
}

// meanAbsDiff is the mean absolute difference of a and b's R, G and B, on a scale of 255.
func meanAbsDiff(a, b image.Image) float64 {
	var sum float64
	bounds := a.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			r1, g1, b1, _ := a.At(x, y).RGBA()
			r2, g2, b2, _ := b.At(x, y).RGBA()
			sum += math.Abs(float64(r1)-float64(r2)) + math.Abs(float64(g1)-float64(g2)) + math.Abs(float64(b1)-float64(b2))
		}
	}
	return sum / 257 / 3 / float64(bounds.Dx()*bounds.Dy())
}

// camera encodes a w x h photograph-like JPEG (smooth gradients under per-pixel noise, so that it
// compresses like a photo and not like a flat test card, and a red square in the top-left corner) and
// writes app1 right after its SOI marker, where cameras put their EXIF.
func camera(w, h int, app1 []byte) ([]byte, error) {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	rng := rand.New(rand.NewPCG(1, 2))
	for y := range h {
		for x := range w {
			fx, fy := float64(x)/float64(w), float64(y)/float64(h)
			r := 40 + 150*fx + 30*math.Sin(fy*9)
			g := 60 + 120*fy + 25*math.Cos(fx*7+fy*3)
			b := 90 + 80*math.Sin((fx+fy)*5)
			if x < markSide && y < markSide {
				r, g, b = 235, 20, 25
			}
			n := float64(rng.IntN(33) - 16)
			i := img.PixOffset(x, y)
			img.Pix[i+0] = clamp(r + n)
			img.Pix[i+1] = clamp(g + n)
			img.Pix[i+2] = clamp(b + n)
			img.Pix[i+3] = 0xff
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: srcQuality}); err != nil {
		return nil, err
	}
	enc := buf.Bytes()
	if len(enc) < 2 || enc[0] != 0xff || enc[1] != 0xd8 {
		return nil, errors.New("the encoder did not start with SOI")
	}
	return append(append(append([]byte{}, enc[:2]...), app1...), enc[2:]...), nil
}

func clamp(v float64) uint8 {
	return uint8(math.Round(math.Min(255, math.Max(0, v))))
}

// exifOrientation is a JPEG APP1 segment holding a big-endian EXIF IFD0 with two entries:
// ImageDescription (description) and Orientation (orientation).
func exifOrientation(orientation uint16, description string) []byte {
	const ifd0 = 8                   // the IFD follows the 8-byte TIFF header
	const data = ifd0 + 2 + 2*12 + 4 // after the entry count, two entries and the next-IFD offset
	be := binary.BigEndian
	tiff := []byte("MM")
	tiff = be.AppendUint16(tiff, 42)
	tiff = be.AppendUint32(tiff, ifd0)
	tiff = be.AppendUint16(tiff, 2)                          // entries, in ascending tag order
	tiff = be.AppendUint16(tiff, 0x010e)                     // ImageDescription
	tiff = be.AppendUint16(tiff, 2)                          // ASCII
	tiff = be.AppendUint32(tiff, uint32(len(description)+1)) // with its NUL
	tiff = be.AppendUint32(tiff, data)                       // too long to be inline: the offset
	tiff = be.AppendUint16(tiff, 0x0112)                     // Orientation
	tiff = be.AppendUint16(tiff, 3)                          // SHORT
	tiff = be.AppendUint32(tiff, 1)
	tiff = be.AppendUint16(tiff, orientation) // inline, left-justified in the 4-byte field
	tiff = be.AppendUint16(tiff, 0)
	tiff = be.AppendUint32(tiff, 0) // no IFD1
	tiff = append(append(tiff, description...), 0)

	payload := append([]byte("Exif\x00\x00"), tiff...)
	seg := []byte{0xff, 0xe1}
	seg = be.AppendUint16(seg, uint16(2+len(payload))) // the length counts itself
	return append(seg, payload...)
}
